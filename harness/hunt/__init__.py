"""``kraft-chaos hunt``: a time budget spent on a portfolio of simulation seeds and real-cluster
runs, the first failure shrunk to a scenario, and one report.

``portfolio.py`` (what runs, in which order, how long each run may be), ``budget.py`` (the
deadline, what a run is expected to take, the cluster lock within the deadline), ``options.py``
(what a hunt is told, the command that repeats it),
``sim_phase.py`` (the simulator's seeds, judged by our checkers), ``real_phase.py`` (the
real-cluster runs), ``shrink_real.py`` (a failed real run shrunk to a scenario file),
``report.py`` (hunt.json, the table, JUnit, the exit code), ``loop.py`` (the hunt itself: its
state, start and end) and its two phases driven, ``sim_rounds.py`` (rounds of batches over the
simulator's configurations) and ``real_rotation.py`` (the replay, the rotation of real runs,
the first failed run shrunk).
The command line is the ``hunt`` subcommand.
"""
