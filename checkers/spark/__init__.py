"""The log-safety and linearizability checks as Spark jobs, for histories and stores
too large for one Python process (``kraft-chaos analyze``).

Each module mirrors a single-process checker in ``checkers/`` and must give
the same anomalies on the same history: ``lost_write`` (anti-join),
``duplicate`` and ``inconsistent_offsets`` (grouping), ``nonmonotonic_read``
(window functions), ``phantom``, ``election_safety``, ``node_checks``
(divergence, from the nodes' own logs), ``linearizability`` (per run and
key, with applyInPandas). ``ingest`` reads ``history.jsonl`` with a declared
schema; ``analyze`` runs them all and ``summary`` writes the tables.
"""
