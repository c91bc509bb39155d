"""Replaying the committed Metadata records of the log into a MetadataImage.

Every node (controller or broker) keeps one, as it keeps the kv state machine
(kraft/state_machines/kv.py): :class:`kraft.runtime.raft.RaftNode` calls :meth:`MetadataReplay.apply_committed`
whenever its high watermark advances, so the image always reflects every committed
Metadata record (docs/data-plane.md) and nothing uncommitted (KIP-631: a broker and
the active controller act on committed metadata only).
"""
from __future__ import annotations

import logging
from typing import Callable, Protocol

from ..core.records import METADATA, Record
from .metadata_image import EMPTY, MetadataImage

log = logging.getLogger("kraft.metadata")


class _Log(Protocol):
    def read(self, start: int, end: int) -> list[Record]: ...


class MetadataReplay:
    """The image of the committed Metadata records: ``image`` (a MetadataImage),
    ``applied`` (how many log records, of any type, have been looked at: the next
    offset to replay), ``errors`` (``(offset, message)`` of committed records the
    image refused; they are skipped, as a bug to report, not a reason to stop) and
    ``listeners`` (callables ``f(image)`` called after each advance of ``applied``).
    """

    def __init__(self) -> None:
        self.image: MetadataImage = EMPTY
        self.applied = 0
        self.errors: list[tuple[int, str]] = []
        self.listeners: list[Callable[[MetadataImage], None]] = []

    def apply_committed(self, log_: _Log, high_watermark: int) -> int:
        """Replay the records of ``log_`` in [applied, high_watermark); returns how many
        Metadata records were applied."""
        if high_watermark <= self.applied:
            return 0
        image, n = self.image, 0
        for r in log_.read(self.applied, high_watermark):
            if r.type == METADATA:
                try:
                    image = image.apply(r.offset, r.payload)
                    n += 1
                except ValueError as e:
                    log.error("committed Metadata record at offset %d refused: %s", r.offset, e)
                    self.errors.append((r.offset, str(e)))
        self.applied = high_watermark
        self.image = image
        for f in list(self.listeners):
            f(image)
        return n
