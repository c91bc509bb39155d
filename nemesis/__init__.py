"""Fault injectors (nemeses) and the seeded fault schedule.

What each fault family is (kinds, leader kinds, what its ops mean) is ``faults/``'s; here is
how each is played on a real cluster: one :class:`~nemesis.injector.Injector` per family,
listed in :mod:`registry` (:mod:`partition`, :mod:`kill` (and ``crash``), :mod:`pause`,
:mod:`packet_faults`, :mod:`flap`, :mod:`rolling`, :mod:`wipe`, :mod:`power_loss`,
:mod:`membership`), started and stopped by :mod:`controller`. Beside them: :mod:`grudge` (who
drops packets from whom), :mod:`targets` (which nodes a fault hits), :mod:`schedule` (the
seeded sequence of faults; :mod:`windows`, how one is played; :mod:`targeted`, the faults
aimed with the monitor's view), :mod:`leader_wait` and :mod:`worker` (the interpreter's
nemesis thread worker, which records nemesis operations in the history).
"""
