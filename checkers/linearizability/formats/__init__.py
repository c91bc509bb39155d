"""History readers, by format name (``--format``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model import Model
from ..models import make_model
from .errors import FormatError
from .pairing import Paired

#: format name -> (description, default model name, model options)
FORMATS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "jsonl": ("our history.jsonl", "register", {}),
    "edn": ("Jepsen history.edn (one op map per line, or a vector of them)", "register", {}),
    "jepsen-log": ("porcupine's Jepsen etcd logs (INFO jepsen.util - ...)", "register", {}),
    "kv-log": ("porcupine's kv logs ({:process 0, :type :invoke, :f :get, ...})", "kv", {"initial": ""}),
}


def guess_format(path: Path) -> str:
    """The format a file name suggests: .jsonl, .edn, .log (jepsen-log), .txt (kv-log).

    Raises ValueError for any other suffix, naming the choices.
    """
    suffix = Path(path).suffix
    by_suffix = {".jsonl": "jsonl", ".edn": "edn", ".log": "jepsen-log", ".txt": "kv-log"}
    if suffix not in by_suffix:
        raise ValueError(f"cannot tell the format of {path}: give --format, one of {', '.join(FORMATS)}")
    return by_suffix[suffix]


def model_for(fmt: str, model_name: str | None) -> Model:
    """The model for a file: ``model_name`` or the format's default, with the format's options
    (porcupine's kv logs start every key at ``""``). Raises ValueError for unknown names."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
    _desc, default, options = FORMATS[fmt]
    name = model_name or default
    opts = options if name in ("kv", default) else {}
    return make_model(name, **opts)


def read_file(path: Path, fmt: str, model: Model) -> Paired:
    """Read ``path`` in format ``fmt`` into ops for ``model``.

    Raises FileNotFoundError, :class:`FormatError` (or the history module's
    HistoryError for jsonl) naming the file and line of bad input.
    """
    from collections import Counter
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no history file at {path}")
    if fmt == "jsonl":
        from .jsonl import read_jsonl
        return read_jsonl(path, model)
    if fmt == "edn":
        from .edn import read_edn
        return read_edn(path, model)
    if fmt == "jepsen-log":
        from .jepsen_log import read_jepsen_log
        ops = read_jepsen_log(path)
    elif fmt == "kv-log":
        from .kv_log import read_kv_log
        ops = read_kv_log(path)
    else:
        raise ValueError(f"unknown format {fmt!r}: choose from {', '.join(FORMATS)}")
    return Paired(ops=ops, ignored=Counter(), failed=0, timed=False)


__all__ = ["FORMATS", "FormatError", "guess_format", "model_for", "read_file"]
