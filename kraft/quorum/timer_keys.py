"""The quorum core's timer keys: the ``key`` of its :class:`kraft.core.events.SetTimer` effects and
of the :class:`kraft.core.events.TimerFired` events a runtime feeds back.

:class:`TimerKey` is a ``str`` enum: a member equals, hashes and prints as its value
(``TimerKey.ELECTION == "election"``, ``repr`` ``'election'``), so runtimes, traces and
tests that keep timers by key see plain strings; the core compares and dispatches on the
members. One timer per key and replica; the core that owns each one:

=================  ==============================================================================
key                what fires it (set by / handled by)
=================  ==============================================================================
``election``       the election timeout in [T, 2T) (Unattached, Prospective, Candidate, Resigned),
                   a Follower's fetch timeout, the back-off after a lost election
                   (kraft/quorum/transitions.py, elections.py; follower.py; handled by elections.py)
``linger``         the leader's append linger: fsync what was appended (disk.py)
``leader``         the leader's check: check quorum, BeginQuorumEpoch resends, resigning once its
                   removal is committed (leader.py; set early by commit.py and voter_changes.py)
``fetch``          a follower's back-off after a failed Fetch, an observer's between discovery
                   Fetches (follower.py; handled by follower.py)
``parked``         the earliest deadline of the Fetches the leader holds (leader.py)
``requests``       the earliest deadline of the client requests waiting (effects.py; handled by
                   client_api.py)
=================  ==============================================================================
"""
from __future__ import annotations

import enum


class TimerKey(str, enum.Enum):
    """A quorum core's timer (see the module table). Members compare, hash, print and
    ``repr`` as their string value."""

    ELECTION = "election"
    LINGER = "linger"
    LEADER_CHECK = "leader"
    FETCH = "fetch"
    PARKED = "parked"
    REQUESTS = "requests"

    __str__ = str.__str__
    __repr__ = str.__repr__
    __format__ = str.__format__
