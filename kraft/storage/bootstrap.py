"""kraft.version and the bootstrap voter set of a data dir (KIP-853, "Bootstrapping").

``format`` without voter options leaves the data dir at kraft.version 0: the
voters are the static ``controller.quorum.voters`` config. With
``--standalone``, ``--initial-controllers`` or ``--no-initial-controllers``
it writes ``bootstrap.checkpoint`` (Kafka writes a bootstrap snapshot with a
KRaftVersionRecord and a VotersRecord; ours is one JSON document)::

    {"KRaftVersion": 1, "Voters": <VotersRecord payload> | null}

``Voters`` null (``--no-initial-controllers``) makes a replica that starts as
an observer and learns the voters from the leader's log.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..rules.voter_set import VoterHistory, VoterNode, VoterSet, parse_initial_controllers
from .durable import write_atomic
from .meta import Meta, MetaError, format_dir

FILE = "bootstrap.checkpoint"


def write_bootstrap(data_dir: Path, kraft_version: int, voters: VoterSet | None) -> None:
    """Write ``bootstrap.checkpoint`` durably. Raises OSError."""
    doc = {"KRaftVersion": kraft_version, "Voters": voters.to_payload() if voters is not None else None}
    write_atomic(Path(data_dir) / FILE, json.dumps(doc).encode())


def read_bootstrap(data_dir: Path) -> tuple[int, VoterSet | None] | None:
    """``(kraft_version, voters or None)`` from ``bootstrap.checkpoint``; None when there is no
    such file (kraft.version 0, static voters). Raises MetaError on a malformed file."""
    path = Path(data_dir) / FILE
    try:
        doc = json.loads(path.read_text())
        version = doc["KRaftVersion"]
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"KRaftVersion {version!r}")
        voters = VoterSet.from_payload(doc["Voters"]) if doc["Voters"] is not None else None
        return version, voters
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError) as e:
        raise MetaError(f"{path} is malformed: {e!r}") from None


def format_node(data_dir: Path, cluster_id: str, node_id: int, *, initial_controllers: str | None = None,
                standalone_listener: str | None = None, no_initial_controllers: bool = False) -> Meta:
    """``kraft format`` (Kafka's StorageTool): meta.properties and, at kraft.version 1, the
    bootstrap checkpoint.

    At most one of: ``initial_controllers`` (``id@host:port:directory-id,...``;
    this node's entry, if any, gives its directory id), ``standalone_listener``
    (``host:port``: a voter set of this node alone, with a new directory id), or
    ``no_initial_controllers`` (kraft.version 1, no voters: an observer). None
    of them: kraft.version 0. Raises MetaError (also for a bad option value).
    """
    if sum(map(bool, (initial_controllers, standalone_listener, no_initial_controllers))) > 1:
        raise MetaError("use only one of --initial-controllers, --standalone, --no-initial-controllers")
    voters: VoterSet | None = None
    dir_id = None
    if initial_controllers:
        try:
            voters = parse_initial_controllers(initial_controllers)
        except ValueError as e:
            raise MetaError(str(e)) from None
        own = voters.get(node_id)
        dir_id = own.directory_id if own else None
    if standalone_listener:
        try:
            host, port = standalone_listener.rsplit(":", 1)
            endpoint = host, int(port)
        except ValueError:
            raise MetaError(f"--standalone: listener {standalone_listener!r} is not host:port") from None
    meta = format_dir(data_dir, cluster_id, node_id, dir_id)
    if standalone_listener:
        voters = VoterSet((VoterNode(node_id, meta.directory_id, *endpoint),))
    if voters is not None or no_initial_controllers:
        write_bootstrap(data_dir, 1, voters)
    return meta


def bootstrap_history(bootstrap: tuple[int, VoterSet | None] | None, static_voters: VoterSet) -> VoterHistory:
    """The voter-set history before the log is read, from a bootstrap checkpoint's
    ``(kraft_version, voters or None)`` (:func:`read_bootstrap`; voters None: empty, an
    observer) or, with no checkpoint (None), kraft.version 0 with ``static_voters``."""
    if bootstrap is None:
        return VoterHistory(static_voters, 0)
    version, voters = bootstrap
    return VoterHistory(voters if voters is not None else VoterSet(), version)


def load_history(data_dir: Path, static_voters) -> VoterHistory:
    """The voter-set history a node starts from (before its log is loaded): the bootstrap
    checkpoint's version and voters (none: empty), or kraft.version 0 with ``static_voters``
    (config ``Voter`` objects). Raises MetaError on a malformed checkpoint."""
    return bootstrap_history(read_bootstrap(data_dir), VoterSet.from_static(static_voters))
