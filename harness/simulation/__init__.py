"""What the harness hands the deterministic simulator (sim/): ``judge.py``, our checkers as the
judge of a simulated history, passed to ``sim.api`` by ``kraft-chaos simulate``, the hunt's
simulation phase and ``make bench``.
"""
