"""KIP-853 voter changes on a target: the quorum's voter state, and AddRaftVoter /
RemoveRaftVoter sent to its leader (our quorum; Kafka's go through its own tool, see
:mod:`targets.kafka.voters`).

Pure of the nemesis: :class:`targets.base.DB` calls these. Blocking (each call runs its own
event loop): call them from a worker thread, as the nemesis controller is run.

Shapes:

* voter state (:func:`voter_state`): ``{"leader": node or None, "leader_id": int,
  "epoch": int, "high_watermark": int, "voters": [{"id", "directory_id", "log_end",
  "last_fetch"}], "observers": [same]}`` (``log_end`` an offset, ``last_fetch`` ms since the epoch), from the leader's DescribeQuorum (KIP-595 / KIP-853 v2 fields
  ``CurrentVoters``, ``Observers``, ``ReplicaDirectoryId``, ``LogEndOffset``);
* a change's outcome (:func:`kraft_change`): ``{"voter_id": int, "directory_id": str,
  "leader": node the RPC went to, "outcome": "ok" | "fail" | "info", "error"?: Kafka's
  error name or "timeout" / "connection", "message"?: str}``. ``fail``: certainly not
  applied (a definite refusal such as DUPLICATE_VOTER or VOTER_NOT_FOUND); ``info``:
  unknown (REQUEST_TIMED_OUT: maybe appended, not known committed; a lost answer).
"""
from __future__ import annotations

import asyncio
import logging
import time

from history import outcomes

from .errors import TargetError
from .kraft_client import KraftClient

log = logging.getLogger("kraft_chaos.targets.voters")

#: ms bound of one DescribeQuorum while looking for the leader
DESCRIBE_TIMEOUT_MS = 1500
#: ms the leader may take to commit a voter change (AddRaftVoter's TimeoutMs)
CHANGE_TIMEOUT_MS = 5000
#: attempts at finding and asking the leader (NOT_LEADER hints and lost connections)
ATTEMPTS = 6
#: s between attempts
RETRY_BACKOFF_S = 0.3


class VoterChangeError(TargetError):
    """A voter change could not be asked at all: kraft.version 0 (static voters: "not
    supported at kraft.version 0"), no leader found, an unknown node, or the tool missing.
    A change the leader answered, even with an error, is an outcome, not this."""


def require_dynamic(db, what: str) -> None:
    """Raise :class:`VoterChangeError` unless ``db`` runs at kraft.version 1 (KIP-853)."""
    if getattr(db, "kraft_version", 0) != 1:
        raise VoterChangeError(f"{what}: not supported at kraft.version 0 (static voters); "
                               f"run with --kraft-version 1 (KIP-853)")


def _replicas(body: dict, key: str) -> list[dict]:
    out = []
    for r in body.get(key) or []:
        if isinstance(r, dict) and isinstance(r.get("ReplicaId"), int):
            out.append({"id": r["ReplicaId"], "directory_id": r.get("ReplicaDirectoryId"),
                        "log_end": r.get("LogEndOffset"), "last_fetch": r.get("LastFetchTimestamp")})
    return out


def state_from_body(db, body: dict) -> dict:
    """The voter state (module doc) of a leader's DescribeQuorum ``body``."""
    leader_id = body.get("LeaderId", -1)
    try:
        leader = db.node_for_id(leader_id) if isinstance(leader_id, int) and leader_id >= 0 else None
    except ValueError:
        leader = None
    return {"leader": leader, "leader_id": leader_id, "epoch": body.get("LeaderEpoch"),
            "high_watermark": body.get("HighWatermark"), "voters": _replicas(body, "CurrentVoters"),
            "observers": _replicas(body, "Observers")}


async def _describe(db, nodes: list[str], timeout_ms: int) -> dict | None:
    """The first leader's DescribeQuorum body among ``nodes`` (a named leader asked first)."""
    factory = db.quorum_client_factory()
    order, seen = list(nodes), set()
    while order:
        node = order.pop(0)
        if node in seen:
            continue
        seen.add(node)
        host, port = db.address(node)
        client = factory(host, port, db.cluster_id, timeout_ms)
        try:
            return await client.describe_quorum()
        except Exception as err:  # noqa: BLE001 - a non-leader or a dead node: ask the next
            hint = getattr(err, "leader_id", None)
            if isinstance(hint, int) and hint >= 0:
                try:
                    order.insert(0, db.node_for_id(hint))
                except ValueError:
                    pass
        finally:
            try:
                await client.close()
            except Exception:  # noqa: BLE001
                pass
    return None


def voter_state(db, timeout_ms: int = DESCRIBE_TIMEOUT_MS, attempts: int = 3) -> dict:
    """The quorum's voter state (module doc) from its leader's DescribeQuorum, asking every
    quorum node (``timeout_ms`` ms each), up to ``attempts`` rounds. Raises
    :class:`VoterChangeError` when no node answers as leader."""
    for i in range(attempts):
        body = asyncio.run(_describe(db, db.quorum_nodes(), timeout_ms))
        if body is not None:
            return state_from_body(db, body)
        time.sleep(RETRY_BACKOFF_S * (i + 1))
    raise VoterChangeError(f"no quorum node answered DescribeQuorum as leader ({attempts} rounds)")


def voter_key(state: dict, node_id: int) -> str | None:
    """The directory id under which ``node_id`` is a voter in ``state``, or None."""
    return next((v["directory_id"] for v in state["voters"] if v["id"] == node_id), None)


def observer(state: dict, node_id: int) -> dict | None:
    """``node_id``'s entry among ``state``'s observers, or None. A removed voter's old key
    may linger there beside the replica's live one: the entry that fetched last wins
    (``LastFetchTimestamp``), then the longer log."""
    found = [o for o in state["observers"] if o["id"] == node_id]
    key = lambda o: (o.get("last_fetch") if isinstance(o.get("last_fetch"), int) else -1,  # noqa: E731
                     o.get("log_end") if isinstance(o.get("log_end"), int) else -1)
    return max(found, key=key) if found else None


def observed_key(state: dict, node_id: int) -> str | None:
    """The directory id ``node_id`` fetches with as an observer in ``state`` (:func:`observer`),
    or None."""
    o = observer(state, node_id)
    return o["directory_id"] if o else None


async def _change(db, op: str, voter_id: int, directory_id: str, host: str, port: int,
                  timeout_ms: int) -> dict:
    out = {"voter_id": voter_id, "directory_id": directory_id}
    target, last = None, None
    for attempt in range(ATTEMPTS):
        if target is None:
            body = await _describe(db, db.quorum_nodes(), DESCRIBE_TIMEOUT_MS)
            target = state_from_body(db, body)["leader"] if body else None
            if target is None:
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
        lhost, lport = db.address(target)
        # the RPC may wait for the commit: its own timeout plus slack bounds the socket
        client = KraftClient(lhost, lport, db.cluster_id, timeout_ms=timeout_ms + 2000)
        try:
            if op == "add":
                await client.add_voter(voter_id, directory_id, host, port, timeout_ms=timeout_ms)
            else:
                await client.remove_voter(voter_id, directory_id)
            return {**out, "leader": target, "outcome": "ok"}
        except outcomes.DefiniteError as err:
            last = {**out, "leader": target, "outcome": "fail", "error": err.code, "message": str(err)}
            if err.code == "NOT_LEADER_OR_FOLLOWER" or err.code == "connection":
                hint = err.leader_id
                try:
                    target = db.node_for_id(hint) if isinstance(hint, int) and hint >= 0 else None
                except ValueError:
                    target = None
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            return last
        except outcomes.IndefiniteError as err:
            return {**out, "leader": target, "outcome": "info", "error": err.code, "message": str(err)}
        finally:
            await client.close()
    if last is not None:
        return last
    raise VoterChangeError(f"{op} voter {voter_id}: no leader found in {ATTEMPTS} attempts")


def kraft_change(db, op: str, node: str, directory_id: str, timeout_ms: int = CHANGE_TIMEOUT_MS) -> dict:
    """AddRaftVoter (``op`` "add") or RemoveRaftVoter ("remove") of (``node``'s id,
    ``directory_id``) on our quorum (KIP-853), sent to the leader, following
    NOT_LEADER_OR_FOLLOWER hints up to :data:`ATTEMPTS` times; ``timeout_ms`` (ms) is the
    add's TimeoutMs. Returns the outcome (module doc). Raises :class:`VoterChangeError`
    when no leader could be asked."""
    host, port = db.address(node)
    return asyncio.run(_change(db, op, db.node_id(node), directory_id, host, port, timeout_ms))
