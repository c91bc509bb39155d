"""The fault families, described once (:class:`faults.spec.FaultSpec`, one module per family,
all listed in :mod:`faults.registry`): their kinds, which strike the leader, what their ops
mean to the checkers and the plots, and how the simulator draws, applies and exports them.

Standard library only and nothing of ours (the bottom layer): the nemesis (``nemesis/``,
which applies each family on a real cluster), the checkers, the reports and the simulator
(``sim/``, under PyPy too) all read it.
"""
