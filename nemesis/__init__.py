"""Fault injectors (nemeses) and the seeded fault schedule.

Modules: :mod:`grudge` (who drops packets from whom), :mod:`partition`
(iptables), :mod:`kill` and :mod:`pause` (process faults), :mod:`targets`
(which nodes a fault hits), :mod:`schedule` (the seeded sequence of faults),
:mod:`controller` (applies and heals faults) and :mod:`worker` (the
interpreter's nemesis thread worker, which records nemesis operations in the history).
"""
