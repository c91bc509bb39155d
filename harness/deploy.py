"""Which target (``--db``) runs on which backend (``--cluster``), and what its nodes run there.

The two choices are independent; this table is where they meet. On ``docker`` every target
runs its node image (``targets.registry.TargetSpec.image``). On ``netns`` and ``ssh`` the nodes
run host processes on files deployed from this machine (:data:`HOST_SOFTWARE`), at the paths
the node image has them:

* ``kraft``: this checkout's ``kraft/`` at ``/opt/kraft/kraft`` with ``PYTHONPATH=/opt/kraft``,
  run by the host's python3 (netns: this host's; ssh: each host's, >= 3.11);
* ``kafka``: Kafka's jars, resolved by Maven into the local cache as the image build does
  (:func:`targets.kafka.jars.resolve_jars`), or a ``--kafka-dist``'s own, at
  ``/opt/kafka/libs``, and the image's log configs at ``/opt/kafka/config``
  (:mod:`targets.kafka.host_files`), with ``KAFKA_HOME`` and
  ``KAFKA_VERSION`` set; run by the host's ``java``, which must be Java >= 17
  (``Software.min_java``: netns checks this host's, ssh each host's, a ``ClusterError``,
  exit 4, naming the host and cause otherwise). Each JVM gets the heap of
  :data:`targets.kafka.server_config.HEAPS` (controllers 256 MB, brokers 512 MB), as on docker.

A pair missing from :data:`SUPPORTED` is an :class:`UnsupportedBackend` error (exit 3) naming both.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from clusters.registry import Resolved, Software

#: the backends each target runs on
SUPPORTED: dict[str, tuple[str, ...]] = {"kraft": ("docker", "netns", "ssh"), "kafka": ("docker", "netns", "ssh")}


class UnsupportedBackend(ValueError):
    """A target that cannot run on a backend (exit 3); the message names both."""


def check_supported(db: str, backend: str, why: str = "") -> None:
    """Raise :class:`UnsupportedBackend` unless target ``db`` runs on ``backend`` (docker,
    netns or ssh). ``why``: how ``--cluster auto`` chose ``backend``, quoted in the message."""
    ok = SUPPORTED.get(db, ("docker",))
    if backend not in ok:
        chose = f" (--cluster auto chose {backend}: {why})" if why else ""
        raise UnsupportedBackend(f"--db {db} cannot run on --cluster {backend}{chose}; "
                                 f"it runs on --cluster {', '.join(ok)}")


def kraft_dir() -> Path:
    """This checkout's ``kraft/`` package directory."""
    import kraft
    return Path(kraft.__file__).resolve().parent


def kraft_software(options: Any, log: Callable[[str], None]) -> Software:
    """Our quorum on host processes: ``kraft/`` at ``/opt/kraft/kraft``, ``PYTHONPATH=/opt/kraft``."""
    return Software(files={"/opt/kraft/kraft": kraft_dir()}, env={"PYTHONPATH": "/opt/kraft"})


def kafka_software(options: Any, log: Callable[[str], None]) -> Software:
    """Kafka ``options.kafka_version`` (or ``options.kafka_dist``) on host JVMs:
    :func:`targets.kafka.target.host_software` (raises ``TargetError``)."""
    from targets.kafka.target import host_software
    return host_software(options, log)


#: what each target's nodes run on ``netns`` and ``ssh``: ``(options, log) -> Software``
HOST_SOFTWARE: dict[str, Callable[[Any, Callable[[str], None]], Software]] = {
    "kraft": kraft_software, "kafka": kafka_software}


def node_software(target, backend: Resolved, options: Any, log: Callable[[str], None]) -> Software:
    """What the nodes of ``target`` (a ``targets.registry.TargetSpec``) run on ``backend``:
    the node image on docker (built if missing: raises ``ClusterError``/``TargetError``),
    deployed files on netns and ssh (:data:`HOST_SOFTWARE`; Kafka's jars resolved if missing:
    raises ``TargetError``). Raises :class:`UnsupportedBackend` for a pair that does not go
    together."""
    check_supported(target.name, backend.name, backend.why)
    if backend.name == "docker":
        return Software(image=target.image(backend.engine, options, log))
    return HOST_SOFTWARE[target.name](options, log)
