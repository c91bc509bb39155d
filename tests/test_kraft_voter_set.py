"""Pure KIP-853 pieces: voter keys and sets, --initial-controllers, the voter-set history
of a log, the voter-change rules and the leader's majority over a changing voter set."""
import pytest

from kraft.core import errors
from kraft.core.records import DATA, KRAFT_VERSION, LEADER_CHANGE, VOTERS, Record
from kraft.core.rpc import Refused
from kraft.rules.high_watermark import majority_position
from kraft.rules.membership import (check_change_allowed, is_caught_up, plan_add, plan_remove, plan_update,
                                    should_resign)
from kraft.rules.replicas import ReplicaProgress, ReplicaTracker
from kraft.rules.voter_set import (ReplicaKey, VoterHistory, VoterNode, VoterSet, addressed_to,
                                   parse_initial_controllers)
from kraft.runtime.config import Voter
from kraft.storage.bootstrap import format_node, load_history, read_bootstrap
from kraft.storage.log import Log
from kraft.storage.meta import MetaError, read_meta

A, B, C, D = (VoterNode(i, f"dir{i}", "h", 9000 + i) for i in (1, 2, 3, 4))


def test_parse_initial_controllers():
    vs = parse_initial_controllers("1@host-a:9093:dirA, 2@10.0.0.2:9093:dirB")
    assert vs.voters == (VoterNode(1, "dirA", "host-a", 9093), VoterNode(2, "dirB", "10.0.0.2", 9093))
    assert vs.majority == 2 and vs.ids == [1, 2]
    for bad in ("", "1@h:9093", "x@h:1:d", "1@h:p:d", "1@:1:d", "1@h:1:d,1@h:2:e"):
        with pytest.raises(ValueError):
            parse_initial_controllers(bad)


def test_voter_keys_match_by_id_and_directory():
    vs = VoterSet((A, B, C))
    assert vs.is_voter(ReplicaKey(1, "dir1"))
    assert not vs.is_voter(ReplicaKey(1, "new-dir"))           # a wiped voter
    assert not vs.is_voter(ReplicaKey(4, "dir4"))
    assert vs.conflicts(ReplicaKey(1, "new-dir")) and not vs.conflicts(ReplicaKey(1, "dir1"))
    static = VoterSet.from_static([Voter(1, "h", 1), Voter(2, "h", 2)])   # kraft.version 0
    assert static.is_voter(ReplicaKey(1, "anything")) and not static.conflicts(ReplicaKey(1, "x"))
    with pytest.raises(ValueError):
        VoterSet((A, VoterNode(1, "other", "h", 1)))


def test_add_remove_update_and_payload_round_trip():
    vs = VoterSet((A, B, C))
    assert vs.add(D).ids == [1, 2, 3, 4] and vs.add(VoterNode(2, "x", "h", 1)) is None
    assert vs.remove(ReplicaKey(2, "dir2")).ids == [1, 3]
    assert vs.remove(ReplicaKey(2, "other")) is None and vs.remove(ReplicaKey(9, "x")) is None
    moved = vs.update(VoterNode(2, "dir2", "elsewhere", 1))
    assert moved.get(2).host == "elsewhere" and vs.update(VoterNode(2, "x", "h", 1)) is None
    assert VoterSet.from_payload(vs.to_payload()) == vs
    for bad in (None, {}, {"Voters": [{"VoterId": 1}]}, {"Voters": [{"VoterId": "1", "VoterDirectoryId": "d",
                                                                      "Endpoints": [{"Host": "h", "Port": 1}]}]}):
        with pytest.raises(ValueError):
            VoterSet.from_payload(bad)


def test_addressed_to_is_kafkas_voter_key_check():
    me = ReplicaKey(1, "d1")
    assert addressed_to(me, None, None) and addressed_to(me, 1, None) and addressed_to(me, 1, "d1")
    assert not addressed_to(me, 2, None) and not addressed_to(me, 1, "old-dir")


def rec(offset, rtype, payload, epoch=1):
    return Record(offset, epoch, rtype, payload)


def test_history_latest_set_wins_even_uncommitted_and_truncation_reverts():
    boot = VoterSet((A, B, C))
    h = VoterHistory(boot, 1)
    assert h.latest == boot and h.last_offset == -1
    assert [t for t, _ in h.start_of_epoch_records()] == [KRAFT_VERSION, VOTERS]
    h.on_append(rec(0, LEADER_CHANGE, {}))
    h.on_append(rec(1, VOTERS, boot.to_payload()))
    h.on_append(rec(2, DATA, 5))
    h.on_append(rec(3, VOTERS, boot.add(D).to_payload()))
    assert h.latest.ids == [1, 2, 3, 4] and h.last_offset == 3 and h.start_of_epoch_records() == []
    h.on_append(rec(4, VOTERS, {"bad": True}))                   # ignored
    assert h.last_offset == 3
    h.on_truncate(3)
    assert h.latest.ids == [1, 2, 3] and h.last_offset == 1
    h.on_truncate(0)
    assert h.latest == boot and h.last_offset == -1


def test_history_kraft_version_and_static_version_0():
    h = VoterHistory(VoterSet(), 1)
    h.on_append(rec(0, KRAFT_VERSION, {"Version": 0, "KRaftVersion": 1}))
    assert h.kraft_version == 1
    static = VoterHistory(VoterSet.from_static([Voter(1, "h", 1)]), 0)
    assert static.kraft_version == 0 and static.start_of_epoch_records() == []


def test_history_follows_a_real_log_through_reopen_and_truncation(tmp_path):
    boot = VoterSet((A, B, C))
    log = Log(tmp_path / "log")
    h = VoterHistory(boot, 1)
    log.listeners.append(h)
    log.open()
    log.append(rec(0, LEADER_CHANGE, {}))
    log.append(rec(1, VOTERS, boot.add(D).to_payload()))
    log.flush()
    log.close()
    again = Log(tmp_path / "log")
    h2 = VoterHistory(boot, 1)
    again.listeners.append(h2)
    again.open()                                     # loaded records are seen too
    assert h2.latest.ids == [1, 2, 3, 4]
    again.truncate_to(1)
    assert h2.latest == boot
    again.close()


def test_format_writes_the_bootstrap_checkpoint(tmp_path):
    initial = "1@h:1:dir-one,2@h:2:dir-two"
    m = format_node(tmp_path / "a", "c", 2, initial_controllers=initial)
    assert m.directory_id == "dir-two" and read_meta(tmp_path / "a").directory_id == "dir-two"
    version, voters = read_bootstrap(tmp_path / "a")
    assert version == 1 and voters == parse_initial_controllers(initial)
    h = load_history(tmp_path / "a", ())
    assert h.kraft_version == 1 and h.latest.ids == [1, 2]
    m = format_node(tmp_path / "b", "c", 3, standalone_listener="h:7")
    assert read_bootstrap(tmp_path / "b")[1].voters == (VoterNode(3, m.directory_id, "h", 7),)
    format_node(tmp_path / "c", "c", 3, no_initial_controllers=True)
    assert read_bootstrap(tmp_path / "c") == (1, None) and len(load_history(tmp_path / "c", ()).latest) == 0
    format_node(tmp_path / "d", "c", 3)                      # kraft.version 0: no checkpoint
    assert read_bootstrap(tmp_path / "d") is None
    static = load_history(tmp_path / "d", (Voter(3, "h", 1),))
    assert static.kraft_version == 0 and static.latest.ids == [3]
    with pytest.raises(MetaError):
        format_node(tmp_path / "e", "c", 1, initial_controllers=initial, no_initial_controllers=True)
    with pytest.raises(MetaError):
        format_node(tmp_path / "f", "c", 1, standalone_listener="no-port")
    assert not (tmp_path / "f" / "meta.properties").exists()


def refused(fn, *a, **kw) -> tuple[int, str]:
    with pytest.raises(Refused) as e:
        fn(*a, **kw)
    return e.value.code, str(e.value)


def test_change_rules_in_kafkas_order():
    ok = dict(is_leader=True, epoch_committed=True, kraft_version=1, last_voters_offset=2, hw=5)
    check_change_allowed(**ok)
    assert refused(check_change_allowed, **{**ok, "is_leader": False})[0] == errors.NOT_LEADER_OR_FOLLOWER
    assert refused(check_change_allowed, **{**ok, "epoch_committed": False})[0] == errors.REQUEST_TIMED_OUT
    assert refused(check_change_allowed, **{**ok, "kraft_version": 0})[0] == errors.UNSUPPORTED_VERSION
    code, msg = refused(check_change_allowed, **{**ok, "last_voters_offset": 5})     # uncommitted change
    assert code == errors.REQUEST_TIMED_OUT and "commit the latest voter change" in msg


def test_add_needs_a_caught_up_replica_and_a_new_id():
    vs = VoterSet((A, B, C))
    p = ReplicaProgress("dir4")
    p.last_fetch_wall_ms, p.last_caught_up_wall_ms = 10_000, 9_900
    assert is_caught_up(p, 10_100, 300) and not is_caught_up(p, 10_500, 300)
    assert plan_add(vs, D, p, 10_100, 300).ids == [1, 2, 3, 4]
    assert refused(plan_add, vs, D, None, 10_100, 300)[0] == errors.REQUEST_TIMED_OUT        # never fetched
    lagging = ReplicaProgress("dir4")
    lagging.last_fetch_wall_ms = 10_000                      # fetches, never reached the leader's end
    assert refused(plan_add, vs, D, lagging, 10_100, 300)[0] == errors.REQUEST_TIMED_OUT
    assert refused(plan_add, vs, VoterNode(2, "x", "h", 1), p, 10_100, 300)[0] == errors.DUPLICATE_VOTER


def test_remove_and_update_rules():
    vs = VoterSet((A, B, C))
    assert plan_remove(vs, A.key).ids == [2, 3]
    assert refused(plan_remove, vs, ReplicaKey(1, "other"))[0] == errors.VOTER_NOT_FOUND
    assert refused(plan_remove, VoterSet((A,)), A.key)[0] == errors.INVALID_REQUEST
    assert plan_update(vs, VoterNode(1, "dir1", "new", 1)).get(1).host == "new"
    assert refused(plan_update, vs, VoterNode(4, "dir4", "h", 1))[0] == errors.VOTER_NOT_FOUND
    removed = plan_remove(vs, A.key)
    assert not should_resign(vs, A.key, 10, 5)               # still a voter
    assert not should_resign(removed, A.key, 5, 5)           # removal not committed yet
    assert should_resign(removed, A.key, 6, 5)


def test_majority_over_the_current_voter_set_without_a_removed_leader():
    t = ReplicaTracker()
    vs = VoterSet((A, B, C))
    for key, off in ((B.key, 7), (C.key, 4), (ReplicaKey(4, "dir4"), 9)):
        t.on_fetch(vs, key, off, 0, 0, 10, now=1.0, wall_ms=1000)
    pos = t.voter_values(vs, A.key, 10, "end_offset", -1)
    assert sorted(pos) == [4, 7, 10] and majority_position(pos) == 7        # the observer does not count
    bigger = vs.add(D)
    pos = t.voter_values(bigger, A.key, 10, "end_offset", -1)
    assert sorted(pos) == [4, 7, 9, 10] and majority_position(pos) == 7      # now it does
    without_leader = vs.remove(A.key)
    pos = t.voter_values(without_leader, A.key, 10, "end_offset", -1)
    assert sorted(pos) == [4, 7] and majority_position(pos) == 4             # the leader counts not itself
    assert t.live_voters(without_leader, A.key, now=1.1, window_s=1.0) == 2
    voters, observers = t.describe(vs, A.key, 10, now_ms=1100)
    assert [v["ReplicaId"] for v in voters] == [1, 2, 3]
    assert [(o["ReplicaId"], o["ReplicaDirectoryId"], o["LogEndOffset"]) for o in observers] == [(4, "dir4", 9)]
