"""Client workloads: which op comes next (a generator) and how it is sent (a client).

Each workload is a :class:`workloads.registry.WorkloadSpec` in
``WORKLOAD_SPECS``: ``append`` (workloads/append.py: unique appends and log
reads), ``kv`` (workloads/kv.py: registers by key, read/write/cas),
``metadata`` (workloads/metadata.py: topic creations on Kafka) and ``queue``
(workloads/queue.py: Jepsen's Kafka queue on a replicated topic).
"""
from .registry import WORKLOAD_SPECS

#: workload names accepted by ``kraft-chaos run --workload``
WORKLOADS = tuple(WORKLOAD_SPECS)
