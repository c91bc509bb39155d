"""Which target (``--db``) runs on which backend (``--cluster``), and what its nodes run there.

The two choices are independent; this table is where they meet. On ``docker`` every target
runs its node image (``targets.registry.TargetSpec.image``). On ``netns`` the nodes run
host processes: ``kraft`` gets this checkout's ``kraft/`` at ``/opt/kraft/kraft`` with
``PYTHONPATH=/opt/kraft`` (the node image's layout) and the host's python3; on ``ssh`` the
same files are copied to each host and run by its python3. Kafka on netns and ssh is not
deployed (its JVM and jars would have to exist on the hosts); asking for it is an
:class:`UnsupportedBackend` error (exit 3) naming both.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from clusters.registry import Resolved, Software

#: the backends each target runs on
SUPPORTED: dict[str, tuple[str, ...]] = {"kraft": ("docker", "netns", "ssh"), "kafka": ("docker",)}


class UnsupportedBackend(ValueError):
    """A target that cannot run on a backend (exit 3); the message names both."""


def check_supported(db: str, backend: str, why: str = "") -> None:
    """Raise :class:`UnsupportedBackend` unless target ``db`` runs on ``backend`` (docker,
    netns or ssh). ``why``: how ``--cluster auto`` chose ``backend``, quoted in the message."""
    ok = SUPPORTED.get(db, ("docker",))
    if backend not in ok:
        chose = f" (--cluster auto chose {backend}: {why})" if why else ""
        extra = (": its JVM and jars are only deployed in the Docker node image"
                 if db == "kafka" else "")
        raise UnsupportedBackend(f"--db {db} cannot run on --cluster {backend}{chose}{extra}; "
                                 f"it runs on --cluster {', '.join(ok)}")


def kraft_dir() -> Path:
    """This checkout's ``kraft/`` package directory."""
    import kraft
    return Path(kraft.__file__).resolve().parent


def node_software(target, backend: Resolved, options: Any, log: Callable[[str], None]) -> Software:
    """What the nodes of ``target`` (a ``targets.registry.TargetSpec``) run on ``backend``:
    the node image on docker (built if missing: raises ``ClusterError``/``TargetError``),
    deployed files on netns and ssh. Raises :class:`UnsupportedBackend` for a pair that does not go
    together."""
    check_supported(target.name, backend.name, backend.why)
    if backend.name == "docker":
        return Software(image=target.image(backend.engine, options, log))
    return Software(files={"/opt/kraft/kraft": kraft_dir()}, env={"PYTHONPATH": "/opt/kraft"})
