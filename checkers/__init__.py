"""History analysis: log-safety checkers and run statistics.

Each checker is ``check_xxx(history, nodes) -> {"valid": True | False |
"unknown", "anomalies": [...], ...}``; :func:`checkers.log_safety.check_all`
runs them all and combines the verdicts.
"""
