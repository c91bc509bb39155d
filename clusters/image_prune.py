"""Which of our images a build may remove, so that it never takes one another checkout uses.

Images are kept by content hash (``kraft-chaos-node:<digest>``, ``kraft-chaos-kafka:<digest>``):
two checkouts of different code build different tags, and checkouts of the same code share
one. Each checkout that uses an image (builds it or finds it) also gives it a **reference
tag**, ``<repo>:<digest>-ref-<checkout id>`` (:func:`ref_tag`; :func:`checkout_id` is a hash of
this host's name and the checkout's real path), so the engine lists who holds what. After
:func:`~clusters.image.ensure_node_image` (or the Kafka one) has its image, :func:`prune_plan`
picks the tags to remove, never touching ``keep``:

* an image this checkout holds but no longer needs: its reference tag goes; the image's other
  tags (so the image itself) go too only when no other checkout holds a reference to it;
* an image no checkout references (built before reference tags existed), or one only other
  checkouts reference: all its tags go, but only when it was created more than ``max_age``
  ago (default :data:`DEFAULT_MAX_AGE_S`, 14 days; ``KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS`` changes
  it, 0 never removes them). A parallel CI job or another worktree makes or finds its image
  moments before it starts its containers; one left alone that long is abandoned, and if not,
  it is rebuilt from the same content next time.

Removing a tag of an image with other tags only untags it, and the engine refuses to remove
an image a container (running or stopped) uses: pruning never forces. The decision is a pure
function of the listed images, so it is tested without an engine (tests/test_image_prune.py).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import os
import socket
from pathlib import Path
from typing import Iterable, Mapping

#: What separates an image's digest from a checkout id in a reference tag.
REF_MARK = "-ref-"
#: Images nobody here references are removed only past this age (seconds).
DEFAULT_MAX_AGE_S = 14 * 86400.0
AGE_ENV = "KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS"
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class ImageInfo:
    """One listed image: its ``tags`` (``repo:tag``) and creation time ``created`` (seconds
    since the epoch; 0 when the engine did not say, which never counts as old)."""

    tags: tuple[str, ...]
    created: float


def checkout_id(root: Path | str = REPO_ROOT, host: str | None = None) -> str:
    """This checkout's id, 16 hex digits: SHA-256 of ``host`` (default this machine's name) and
    the real path of ``root`` (default this repository). Two worktrees, or one path on two CI
    runners, get different ids."""
    host = socket.gethostname() if host is None else host
    return hashlib.sha256(f"{host}\0{os.path.realpath(root)}".encode()).hexdigest()[:16]


def ref_tag(tag: str, checkout: str) -> str:
    """The reference tag of ``checkout`` on image ``tag`` (``repo:digest``):
    ``repo:digest-ref-<checkout>``."""
    return f"{tag}{REF_MARK}{checkout}"


def ref_owner(tag: str) -> str | None:
    """The checkout id of a reference tag, or None for any other tag."""
    _, _, name = tag.rpartition(":")
    _, mark, owner = name.rpartition(REF_MARK)
    return owner if mark and owner else None


def max_age_s(env: Mapping[str, str] | None = None) -> float:
    """The age (seconds) past which unreferenced and other checkouts' images may go:
    ``KRAFT_CHAOS_IMAGE_MAX_AGE_DAYS`` (days, a number >= 0; 0 means never) or
    :data:`DEFAULT_MAX_AGE_S`. Raises ValueError for anything else."""
    text = (os.environ if env is None else env).get(AGE_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_AGE_S
    try:
        days = float(text)
    except ValueError:
        raise ValueError(f"{AGE_ENV} must be a number of days, got {text!r}") from None
    if not days >= 0 or days == float("inf"):
        raise ValueError(f"{AGE_ENV} must be a finite number >= 0, got {text!r}")
    return days * 86400.0


def prune_plan(images: Iterable[ImageInfo], keep: str, checkout: str, now: float,
               max_age: float = DEFAULT_MAX_AGE_S) -> list[str]:
    """The tags to remove, in listing order (rules in the module docstring). ``keep``: the
    image this checkout needs now (none of its tags is ever removed); ``checkout``: this
    checkout's id; ``now`` and the images' ``created``: epoch seconds; ``max_age``: seconds
    (0: unreferenced and others' images are never removed)."""
    out: list[str] = []
    for image in images:
        if keep in image.tags:
            continue
        owners = {t: ref_owner(t) for t in image.tags}
        mine = [t for t, o in owners.items() if o == checkout]
        others = any(o is not None and o != checkout for o in owners.values())
        old = max_age > 0 and image.created > 0 and now - image.created > max_age
        if mine and not others:
            drop = list(image.tags)
        elif mine:
            drop = mine
        elif old:
            drop = list(image.tags)
        else:
            drop = []
        out.extend(t for t in drop if t not in out)
    return out


def parse_created(value) -> float:
    """The engine's ``Created`` field (RFC 3339 with nanoseconds, e.g.
    ``2025-01-02T03:04:05.123456789Z``, or epoch seconds) as epoch seconds; 0.0 when absent
    or unreadable."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        return 0.0
    text = value.strip().replace("Z", "+00:00")
    date, dot, rest = text.partition(".")
    if dot:                                  # fromisoformat takes at most 6 fraction digits
        digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]
        text = f"{date}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.timestamp()


def image_info(image) -> ImageInfo:
    """An :class:`ImageInfo` of a docker SDK ``Image`` (its ``tags`` and ``attrs["Created"]``)."""
    attrs = getattr(image, "attrs", None) or {}
    return ImageInfo(tuple(image.tags or ()), parse_created(attrs.get("Created")))
