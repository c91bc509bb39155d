"""The checker as a fold (checkers/fold.py), as ``check`` and the runner run it by name.

:class:`TxnChecker` reads the history once, keeping what checkers/kafka_txn/collect.py keeps
(the data ops' sends and polls), and analyses it at the end (analysis.py). Its options come
from the check's ``CheckContext``: ``options`` (what ``kraft-chaos check`` was told) over the
run's ``config`` (``ww_deps``, ``forbid``).
"""
from __future__ import annotations

from ..fold import CheckContext, Checker
from .analysis import Options, analyse
from .collect import Collector


class TxnChecker(Checker):
    """Jepsen's Kafka workload checker over one pass of the history. Result:
    :func:`checkers.kafka_txn.analysis.analyse`'s (``by_kind``: one result per anomaly kind,
    which ``check_all_folds`` lists as checkers of their own). ``nodes`` is unused."""

    passes = 1

    def __init__(self, options: Options = Options()):
        self.options = options
        self.collector = Collector()
        self.feed = self.collector.feed

    def result(self, nodes) -> dict:
        """The analysis of what was fed (``nodes`` unused)."""
        self.collector.finish()
        return analyse(self.collector, self.options)


def options_of(ctx: CheckContext) -> Options:
    """The options for a run: ``ctx.options``' keys over ``ctx.config``'s (``ww_deps``,
    ``forbid``). Raises ValueError naming a bad ``forbid`` kind."""
    merged = {k: ctx.config[k] for k in ("ww_deps", "forbid") if k in ctx.config}
    merged.update({k: v for k, v in (getattr(ctx, "options", None) or {}).items() if v is not None})
    return Options.from_mapping(merged)
