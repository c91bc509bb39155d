"""The ``quorum-state`` file (KIP-595, "quorum-state"; KIP-853 adds votedDirectoryId).

One JSON document, written before the in-memory transition it records:
temp file, fsync, rename, directory fsync.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..core.states import ElectionState  # noqa: F401 - re-exported (tests, logreader)
from .durable import write_atomic

FILE = "quorum-state"


class QuorumStateError(RuntimeError):
    """quorum-state exists but cannot be parsed."""


def write_state(data_dir: Path, st: ElectionState) -> None:
    """Persist ``st`` durably (temp file, fsync, rename, dir fsync). Raises OSError."""
    doc = {"leaderId": st.leader_id, "leaderEpoch": st.epoch, "votedId": st.voted_id,
           "votedDirectoryId": st.voted_directory_id, "data_version": 1}
    write_atomic(Path(data_dir) / FILE, json.dumps(doc).encode())


def read_state(data_dir: Path) -> ElectionState:
    """Read quorum-state; a missing file is epoch 0 with no leader and no vote.

    Raises QuorumStateError on a malformed file.
    """
    path = Path(data_dir) / FILE
    try:
        doc = json.loads(path.read_text())
        return ElectionState(int(doc["leaderEpoch"]), int(doc["leaderId"]), int(doc["votedId"]),
                             doc.get("votedDirectoryId"))
    except FileNotFoundError:
        return ElectionState()
    except (ValueError, KeyError, TypeError) as e:
        raise QuorumStateError(f"{path} is malformed: {e!r}") from None
