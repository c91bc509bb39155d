"""Clients and operation generators that drive a kraft cluster and record a history.

``WORKLOADS`` names the workloads the CLI accepts (``--workload``): ``append``
(workloads/append.py: unique appends and log reads) and ``kv``
(workloads/kv.py: registers by key, read/write/cas).
"""

#: workload names accepted by ``kraft-chaos run --workload``
WORKLOADS = ("append", "kv")
