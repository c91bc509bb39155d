"""Jepsen's ``history.edn``: op maps, one per line (Jepsen) or inside a vector (knossos' test data).

Knossos' oldest histories write an op as a vector ``[process type f value]``;
those are read too.

Each top-level map is cut out of the text by a small scanner that knows
EDN strings, characters and ``;`` comments, so every op keeps the line it
starts on; the map itself is read with the edn-format library. Keywords
become plain strings (``:ok`` -> ``"ok"``, ``:nemesis`` -> ``"nemesis"``),
vectors and lists become tuples, maps dicts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import edn_format

from ..model import Model
from .errors import FormatError
from .pairing import Paired, pair_history


def plain(v: Any) -> Any:
    """An edn-format value as plain, hashable Python: keywords and symbols as strings,
    vectors/lists as tuples, maps as dicts, sets as frozensets."""
    if isinstance(v, (edn_format.Keyword, edn_format.Symbol)):
        return v.name
    if isinstance(v, (list, tuple, edn_format.ImmutableList)):
        return tuple(plain(x) for x in v)
    if isinstance(v, (dict, edn_format.ImmutableDict)):
        return {plain(k): plain(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return frozenset(plain(x) for x in v)
    return v


def op_maps(text: str, path: Any) -> Iterator[tuple[int, str]]:
    """Yield (line, text) for each top-level ``{...}`` map in ``text``.

    Top level means outside any map, optionally inside one enclosing vector
    or list. Raises :class:`FormatError` naming the line of anything else at
    top level, or of a map that never closes.
    """
    i, n, line = 0, len(text), 1
    depth = 0           # nesting inside the current op map
    outer = 0           # enclosing [ or ( around the maps
    start = start_line = None
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == ";":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    line += 1
                j += 1
            if j >= n:
                raise FormatError(path, line, "unterminated string")
            i = j
        elif ch == "\\" and depth:
            i += 2  # a character literal such as \{
            continue
        elif depth:
            if ch in "{[(":
                depth += 1
            elif ch in "}])":
                depth -= 1
                if depth == 0:
                    yield start_line, text[start:i + 1]
        elif ch == "{":
            depth, start, start_line = 1, i, line
        elif ch == "[" and not _opens_container(text, i + 1):
            depth, start, start_line = 1, i, line  # an op as [process type f value]
        elif ch in "[(" and outer == 0:
            outer = 1
        elif ch in "])" and outer == 1:
            outer = 2
        elif not (ch.isspace() or ch == ","):
            j = text.find("\n", i)
            raise FormatError(path, line, f"expected an op map {{...}}, found {text[i:j if j > 0 else n][:60]!r}")
        i += 1
    if depth:
        raise FormatError(path, start_line, "op map never closes (truncated file?)")


def _opens_container(text: str, i: int) -> bool:
    """Does the ``[`` or ``(`` before ``text[i]`` enclose ops (its first item a map or vector)?"""
    while i < len(text) and (text[i].isspace() or text[i] == ","):
        i += 1
    return i < len(text) and text[i] in "{[("


def as_op_map(v: Any) -> Any:
    """An op vector ``[process type f value]`` (optionally ``error`` after) as an op map;
    anything else unchanged."""
    if isinstance(v, tuple) and len(v) in (4, 5):
        op = {"process": v[0], "type": v[1], "f": v[2], "value": v[3]}
        if len(v) == 5:
            op["error"] = v[4]
        return op
    return v


def read_edn_ops(path: Path) -> list[tuple[int, dict]]:
    """(line, op dict) for each op map in a history.edn; raises FormatError naming the line."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    out = []
    for line, chunk in op_maps(text, path):
        try:
            v = edn_format.loads(chunk)
        except Exception as e:  # edn-format raises several types for bad input
            raise FormatError(path, line, f"invalid EDN map: {e}") from None
        v = as_op_map(plain(v))
        if not isinstance(v, dict):
            raise FormatError(path, line, f"expected an op map or [process type f value], got {chunk[:60]!r}")
        out.append((line, v))
    return out


def read_edn(path: Path, model: Model) -> Paired:
    """Read a Jepsen history.edn and pair its ops for ``model`` (Jepsen's rules:
    fail never happened, info stays open). Times are ``:time`` when every op has
    one, else event positions. Raises :class:`FormatError` naming the line."""
    return pair_history(read_edn_ops(path), model, path)
