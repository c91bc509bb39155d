"""The deterministic simulator (``kraft-chaos simulate``): whole clusters of our quorum cores
(kraft/quorum/) and broker cores (kraft/replication/) in one process, in virtual time, under
seeded faults, with named invariants checked after every step and a Jepsen history per
schedule.

Layers: ``sim/`` imports ``kraft/``, ``history/`` and ``generator/`` only. The judge (our
checkers) is a parameter that the caller passes in (:mod:`sim.judging`). The public API is
:mod:`sim.api` (its contract: sim/README.md).
"""
