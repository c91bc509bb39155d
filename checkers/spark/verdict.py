"""Verdicts as the analysis writes them: "valid", "invalid" or "unknown"."""
from __future__ import annotations

from typing import Any, Iterable


def name(valid: Any) -> str:
    """A checker's ``valid`` (True, False, "unknown", None...) as a verdict name."""
    return {True: "valid", False: "invalid"}.get(valid, "unknown")


def worst(verdicts: Iterable[str]) -> str:
    """invalid if any is, else unknown if any is, else valid (also for none at all)."""
    seen = set(verdicts)
    if "invalid" in seen:
        return "invalid"
    if "unknown" in seen:
        return "unknown"
    return "valid"
