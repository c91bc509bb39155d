"""Clients and operation generators that drive a kraft cluster and record a history.

``WORKLOADS`` names the workloads the CLI accepts (``--workload``).
"""

#: workload names accepted by ``kraft-chaos run --workload``
WORKLOADS = ("append",)
