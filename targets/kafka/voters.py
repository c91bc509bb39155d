"""Kafka's own ``kafka-metadata-quorum`` tool (``MetadataQuorumCommand``): the quorum's status
(``describe --status``) and voter changes (KIP-853 AddRaftVoter / RemoveRaftVoter), as argv
and output readers, and run on a node of a ``targets.kafka.db.KafkaDB`` (a JVM per call:
seconds, not for hot paths); :class:`KafkaQuorumTool` makes them the KafkaDB's methods.

Kafka 4.3.1's tool (checked with ``--help`` in the node image)::

    MetadataQuorumCommand --bootstrap-controller H:9093,... remove-controller
        --controller-id N --controller-directory-id D
    MetadataQuorumCommand --bootstrap-controller H:9093,... --command-config
        /etc/kafka/server.properties add-controller

``add-controller`` runs on the joining controller: it reads the node id, the controller
listener and (from ``metadata.log.dir``'s ``meta.properties``) the directory id from the
config it is given. The tool exits 0 on success; otherwise it prints the Admin client's
exception (``org.apache.kafka.common.errors.DuplicateVoterException: ...``), exit 1.
The tool class and whether it has these commands (from 3.9) are the release's
(:data:`targets.kafka.releases.RELEASES`); a release without them raises ``TargetError``.
"""
from __future__ import annotations

import re
import shlex
import time
from typing import Sequence

from clusters.remote import RemoteError

from targets.errors import TargetError

from .releases import NEWEST, Release
from .server_config import LIBS_DIR, tool_jvm_opts


def quorum_status_argv(bootstrap_controllers: str, bootstrap_servers: str, java: str = "java",
                       rel: Release = NEWEST) -> list[str]:
    """``MetadataQuorumCommand --bootstrap-controller <host:port,...> describe --status``
    (kafka-metadata-quorum.sh) as a java argv, with ``rel``'s tool class; a release without
    ``--bootstrap-controller`` (before 3.7, KIP-919) asks the brokers (``--bootstrap-server``)."""
    if "--bootstrap-controller" in rel.quorum_tool_flags:
        where = ["--bootstrap-controller", bootstrap_controllers]
    else:
        where = ["--bootstrap-server", bootstrap_servers]
    return [java, *tool_jvm_opts(rel), "-cp", f"{LIBS_DIR}/*", rel.quorum_tool, *where, "describe", "--status"]


def parse_quorum_status(text: str) -> dict[str, str]:
    """``{"ClusterId": ..., "LeaderId": "1", "LeaderEpoch": ..., "CurrentVoters": "[...]", ...}``
    from ``describe --status`` output (``Key:   value`` lines; others ignored)."""
    status = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and not any(c.isspace() for c in key.strip()):
            status[key.strip()] = value.strip()
    return status


def quorum_status(db, via: str | None = None, timeout_s: float = 60.0) -> dict[str, str]:
    """``describe --status`` (:func:`quorum_status_argv`) run on ``db``'s node ``via`` (default:
    the first controller) against every controller (before 3.7: the brokers):
    ``{"LeaderId": "1", "LeaderEpoch": ..., ...}``. Raises ``RemoteError`` when the tool fails
    (no quorum, unreachable)."""
    argv = quorum_status_argv(bootstrap(db.controller_addresses()), db.bootstrap_servers(), java=db.paths.java,
                              rel=db.release)
    out = db.remote.exec(via or db.controllers()[0], argv, check=True, timeout_s=timeout_s).stdout
    return parse_quorum_status(out)


def wait_for_leader(db, timeout_s: float = 60.0, via: str | None = None) -> int:
    """Poll :func:`quorum_status` until it names a leader; returns its node id. Raises
    ``TargetError`` after ``timeout_s`` seconds (with the last error)."""
    deadline, last = time.monotonic() + timeout_s, ""
    while True:
        try:
            status = quorum_status(db, via, timeout_s=max(5.0, deadline - time.monotonic()))
            if int(status.get("LeaderId", -1)) >= 0:
                return int(status["LeaderId"])
            last = "no leader yet"
        except (RemoteError, ValueError) as e:
            last = str(e)
        if time.monotonic() >= deadline:
            raise TargetError(f"no KRaft leader within {timeout_s:.0f} s: {last}")
        time.sleep(0.5)

#: s the tool may take (a JVM start plus the Admin client's own timeouts)
TOOL_TIMEOUT_S = 90.0
#: the Admin client's timeout for one call (ms), as ``--command-config`` settings
ADMIN_TIMEOUT_MS = 20000
#: errors after which the change certainly was not applied (outcome ``fail``); the others
#: (timeouts, lost connections) are ``info``
DEFINITE = ("DUPLICATE_VOTER", "VOTER_NOT_FOUND", "UNSUPPORTED_VERSION", "INVALID_REQUEST",
            "NOT_LEADER_OR_FOLLOWER", "INVALID_VOTER_KEY", "CLUSTER_AUTHORIZATION_FAILED")
_EXCEPTION = re.compile(r"(\w+)Exception\b")


def _base(bootstrap_controllers: str, java: str, rel: Release, command: str) -> list[str]:
    if command not in rel.quorum_tool_flags:
        raise TargetError(f"Kafka {rel.name}'s kafka-metadata-quorum has no {command} "
                          f"(voter changes, KIP-853, exist from 3.9)")
    return [java, *tool_jvm_opts(rel), "-cp", f"{LIBS_DIR}/*", rel.quorum_tool, "--bootstrap-controller",
            bootstrap_controllers]


def remove_argv(bootstrap_controllers: str, voter_id: int, directory_id: str, java: str = "java",
                command_config: str | None = None, rel: Release = NEWEST) -> list[str]:
    """``remove-controller --controller-id N --controller-directory-id D`` with ``rel``'s
    tool. Raises ``TargetError`` when ``rel`` has no ``remove-controller``."""
    cfg = ["--command-config", command_config] if command_config else []
    return [*_base(bootstrap_controllers, java, rel, "remove-controller"), *cfg, "remove-controller",
            "--controller-id", str(voter_id), "--controller-directory-id", directory_id]


def add_argv(bootstrap_controllers: str, server_properties: str, java: str = "java",
             rel: Release = NEWEST) -> list[str]:
    """``--command-config <the joining controller's server.properties> add-controller`` with
    ``rel``'s tool. Raises ``TargetError`` when ``rel`` has no ``add-controller``."""
    return [*_base(bootstrap_controllers, java, rel, "add-controller"), "--command-config", server_properties,
            "add-controller"]


def error_name(exception: str) -> str:
    """Kafka's error name of an exception class name: ``DuplicateVoter`` ->
    ``DUPLICATE_VOTER``, ``NotLeaderOrFollower`` -> ``NOT_LEADER_OR_FOLLOWER``,
    ``Timeout`` -> ``REQUEST_TIMED_OUT``."""
    if exception in ("Timeout", "RequestTimedOut"):
        return "REQUEST_TIMED_OUT"
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", exception).upper()


def parse_outcome(exit_code: int, text: str) -> dict:
    """``{"outcome": "ok"}`` for exit 0; else ``{"outcome": "fail" | "info", "error": name,
    "message": the exception line}`` (``fail`` for :data:`DEFINITE` errors, ``info`` for
    the rest: the change may have been appended), error ``"tool"`` when no exception is
    printed."""
    if exit_code == 0:
        return {"outcome": "ok"}
    found = None
    for line in text.splitlines():
        for m in _EXCEPTION.finditer(line.strip()):
            if m.group(1) not in ("Execution", "Completion"):     # the wrapped cause wins
                found = (m.group(1), line.strip())
    if found is None:
        tail = " | ".join(text.strip().splitlines()[-3:])[:400]
        return {"outcome": "info", "error": "tool", "message": f"exit {exit_code}: {tail}"}
    name = error_name(found[0])
    return {"outcome": "fail" if name in DEFINITE else "info", "error": name, "message": found[1][:400]}


def admin_properties() -> str:
    """``--command-config`` text for remove-controller: the Admin client's timeouts (ms)."""
    return (f"request.timeout.ms={ADMIN_TIMEOUT_MS // 2}\ndefault.api.timeout.ms={ADMIN_TIMEOUT_MS}\n")


def bootstrap(addresses: Sequence[tuple[str, int]]) -> str:
    """``host:port,...`` of the controllers."""
    return ",".join(f"{h}:{p}" for h, p in addresses)


def kafka_change(db, op: str, node: str, directory_id: str) -> dict:
    """AddRaftVoter (``op`` "add", the tool run on ``node`` itself with its server.properties)
    or RemoveRaftVoter ("remove", run on the leader's container, else the first controller's)
    on ``db`` (a ``targets.kafka.db.KafkaDB``). Returns ``{"voter_id", "directory_id",
    "via": node the tool ran on, "outcome", "error"?, "message"?}`` (:func:`parse_outcome`).
    Raises ``clusters.remote.RemoteError`` when the container cannot be reached."""
    boot = bootstrap(db.controller_addresses())
    admin = shlex.quote(admin_properties())
    if op == "add":
        via, tmp = node, "/tmp/kc-add-controller.properties"
        script = (f"cat {shlex.quote(db.paths.config)} > {tmp} && printf %s {admin} >> {tmp} && "
                  + shlex.join(add_argv(boot, tmp, java=db.paths.java, rel=db.release)))
    else:
        try:
            via = db.voter_state()["leader"] or db.controllers()[0]
        except Exception:  # noqa: BLE001 - any controller's container can run the tool
            via = db.controllers()[0]
        tmp = "/tmp/kc-remove-controller.properties"
        script = (f"printf %s {admin} > {tmp} && "
                  + shlex.join(remove_argv(boot, db.node_id(node), directory_id, java=db.paths.java,
                                           command_config=tmp, rel=db.release)))
    res = db.remote.exec(via, script, check=False, timeout_s=TOOL_TIMEOUT_S)
    out = parse_outcome(res.exit_code, f"{res.stdout}\n{res.stderr}")
    return {"voter_id": db.node_id(node), "directory_id": directory_id, "via": via, **out}


class KafkaQuorumTool:
    """The tool as methods of a ``targets.kafka.db.KafkaDB`` (a mixin; a JVM per call:
    seconds, not for hot paths)."""

    def _voter_change(self, op: str, node: str, directory_id: str) -> dict:
        """AddRaftVoter / RemoveRaftVoter with Kafka's own ``kafka-metadata-quorum``
        (:func:`kafka_change`)."""
        return kafka_change(self, op, node, directory_id)

    def quorum_status(self, via: str | None = None, timeout_s: float = 60.0) -> dict[str, str]:
        """``kafka-metadata-quorum describe --status`` on ``via`` (:func:`quorum_status`)."""
        return quorum_status(self, via, timeout_s)

    def wait_for_leader(self, timeout_s: float = 60.0, via: str | None = None) -> int:
        """The leader's node id, once :meth:`quorum_status` names one (:func:`wait_for_leader`)."""
        return wait_for_leader(self, timeout_s, via)
