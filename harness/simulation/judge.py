"""Our checkers as the simulator's judge (the contract: sim/judging.py): a simulated history
is checked as a real run's is, by the checkers its workload names.

:func:`judge_history` is a module-level function so that ``sim.api.simulate`` can send it to
its worker processes (pickled by name).
"""
from __future__ import annotations

from checkers.fold import CheckContext
from checkers.registry import check_all_folds
from history.node_data import NodeData
from workloads.registry import workload_spec


def judge_history(ops: list, nodes: dict, workload: str, config: dict) -> tuple[object, list]:
    """The judge of a simulated history (sim/judging.py): the checkers ``workload`` names
    (workloads/registry.py), run as on a real run's history (checkers/registry.py
    ``check_all_folds``, without the statistics, which never change the verdict) with each
    node's final log as its node data. Returns ``(valid,
    names of the checkers that found anomalies)``."""
    spec = workload_spec(workload)
    data = {name: NodeData(name, records, hw) for name, (records, hw) in nodes.items()}
    raw = check_all_folds(lambda: iter(ops), spec.checkers, data or None, CheckContext(None, config),
                          statistics=False)
    return raw["valid"], sorted(name for name, n in raw["anomaly_counts"].items() if n)
