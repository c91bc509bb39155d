"""The linearizability checker: porcupine's algorithm, history readers and models.

Entry points: :func:`check_history` (a run's history, as the runner and
``kraft-chaos check`` use it) and :func:`check_file` (any supported history
file, ``kraft-chaos check --model M --format F FILE``).
"""
from __future__ import annotations

from pathlib import Path

from .checker import CheckResult, check_operations
from .html import HTML_NAME, write_html
from .formats import FORMATS, FormatError, guess_format, model_for, read_file
from .models import MODELS, make_model
from .model import Model
from .operation import UNKNOWN, Operation



def report(result: CheckResult, paired, out_dir: Path | None) -> dict:
    """results.json's summary of ``result``, plus the ops set aside while reading; writes
    ``out_dir/linearizability.html`` when the verdict is not valid and there is an explanation."""
    summary = result.summary()
    summary["failed_ops_dropped"] = paired.failed
    summary["crashed_ops"] = paired.crashed
    if paired.ignored:
        summary["ignored"] = dict(paired.ignored)
    if paired.unknown:              # ops the model cannot read: whatever the rest shows, no verdict
        summary["unknown_functions"] = dict(paired.unknown)
        summary["valid"] = "unknown"
        summary["reason"] = "; ".join(filter(None, (
            f"the history holds ops of functions the {result.model} model does not know: "
            + ", ".join(f"{f} ({n})" for f, n in sorted(paired.unknown.items())) + "; it was not checked whole",
            summary.get("reason"))))
    if out_dir is not None and result.explanations:
        explanation = {"model": result.model, "valid": result.valid,
                       "time_unit": "ns" if paired.timed else "event", "partitions": result.explanations}
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        summary["html"] = str(write_html(explanation, Path(out_dir) / HTML_NAME))
    return summary


def check_history(history: list[dict], model: str = "register", by_key: bool = True,
                  timeout_s: float | None = None, out_dir: Path | None = None,
                  memory_bound: int | None = None) -> dict:
    """Check a run's history (op dicts as ``history.read_history`` returns them).

    ``model``: a name from :data:`MODELS`. ``by_key``: the ops carry
    ``[key, value]`` (Jepsen's independent keys) and each key is checked on
    its own (a ``register`` model then becomes ``kv``). Returns the summary
    (``valid`` True/False/"unknown", ``anomalies`` with the stuck op and the
    state it needs, ``check_s``...); writes ``linearizability.html`` into
    ``out_dir`` when the history is not linearizable. Raises FormatError for
    ops that do not pair.
    """
    from .formats.jsonl import pair_run_history
    m = make_model("kv" if by_key and model == "register" else model)
    paired = pair_run_history(history, m)
    result = check_operations(m, paired.ops, partitioned=True, timeout_s=timeout_s,
                              memory_bound=memory_bound)
    return report(result, paired, out_dir)


def check_file(path: Path, model: str | None = None, fmt: str | None = None,
               partitioned: bool = True, timeout_s: float | None = None,
               out_dir: Path | None = None, memory_bound: int | None = None) -> dict:
    """Check a history file. ``fmt`` defaults to what the suffix suggests, ``model`` to the
    format's usual one. Returns the summary as :func:`check_history` does, plus
    ``format`` and ``file``. Raises ValueError (unknown model/format), FileNotFoundError,
    FormatError (with the file and line of bad input)."""
    fmt = fmt or guess_format(Path(path))
    m = model_for(fmt, model)
    paired = read_file(Path(path), fmt, m)
    result = check_operations(m, paired.ops, partitioned=partitioned, timeout_s=timeout_s,
                              memory_bound=memory_bound)
    summary = report(result, paired, out_dir)
    summary.update({"format": fmt, "file": str(path), "partitioned": partitioned})
    return summary


__all__ = ["check_history", "check_file", "check_operations", "CheckResult", "FORMATS", "FormatError",
           "MODELS", "Model", "Operation", "UNKNOWN", "make_model", "HTML_NAME"]
