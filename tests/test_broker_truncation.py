"""kraft/rules/truncation.py: becomeFollower's truncation in both modes, on real logs, and the
classic KIP-101 scenarios where truncate-to-hw (Kafka 0.8) and leader-epoch differ."""
from kraft.core.records import DATA, Record
from kraft.rules.truncation import (UNDEFINED, Step, leader_epoch_answer, leader_epoch_step,
                                    truncate_to_hw_target)
from kraft.storage.log import Log


def make_log(path, epochs_values):
    log = Log(path)
    log.open()
    for epoch, value in epochs_values:
        log.append(Record(log.end_offset, epoch, DATA, value))
    log.flush()
    return log


def content(log):
    return [(r.epoch, r.payload) for r in log.records]


def become_follower(follower: Log, hw: int, leader: Log, mode: str) -> int:
    """What the broker's becomeFollower does, with the leader's OffsetForLeaderEpoch
    answered locally; returns the number of OffsetForLeaderEpoch rounds."""
    rounds = 0
    if mode == "truncate-to-hw":
        follower.truncate_to(truncate_to_hw_target(hw, follower.end_offset))
        return rounds
    while follower.end_offset > 0:
        rounds += 1
        step = leader_epoch_step(follower, *leader_epoch_answer(leader, follower.last_epoch), hw)
        follower.truncate_to(step.offset)
        if step.done:
            break
    return rounds


def fetch_all(follower: Log, leader: Log) -> None:
    """The follower's fetch loop, run until caught up (no offset validation: ReplicaFetch has none)."""
    for r in leader.read(follower.end_offset, leader.end_offset):
        follower.append(r)
    follower.flush()


def test_truncate_to_hw_target():
    assert truncate_to_hw_target(3, 5) == 3
    assert truncate_to_hw_target(7, 5) == 5
    assert truncate_to_hw_target(-1, 5) == 0


def test_leader_answer(tmp_path):
    leader = make_log(tmp_path / "l", [(1, "a"), (1, "b"), (3, "c"), (3, "d"), (4, "e")])
    assert leader_epoch_answer(leader, 1) == (1, 2)
    assert leader_epoch_answer(leader, 2) == (1, 2)        # largest epoch <= 2, and its end
    assert leader_epoch_answer(leader, 3) == (3, 4)
    assert leader_epoch_answer(leader, 9) == (4, 5)        # the last epoch ends at the log end
    assert leader_epoch_answer(leader, 0) == (0, 0)        # nothing of epoch 0 or below
    assert leader_epoch_answer(make_log(tmp_path / "e", []), 2) == (2, 0)
    assert leader_epoch_answer(leader, -1) == (UNDEFINED, UNDEFINED)


def test_step_when_the_epochs_agree(tmp_path):
    f = make_log(tmp_path / "f", [(1, "a"), (1, "b"), (2, "x"), (2, "y")])
    assert leader_epoch_step(f, 2, 3, hw=0) == Step(3, True)       # leader's epoch 2 ended sooner
    assert leader_epoch_step(f, 2, 9, hw=0) == Step(4, True)       # leader has more of it: keep all
    assert leader_epoch_step(f, 1, 2, hw=0) == Step(2, True)       # epoch 2 never reached the leader
    assert leader_epoch_step(f, 0, 0, hw=0) == Step(0, True)       # nothing in common
    assert leader_epoch_step(f, UNDEFINED, UNDEFINED, hw=1) == Step(1, True)   # fallback: own hw
    assert leader_epoch_step(make_log(tmp_path / "e", []), 3, 7, hw=0) == Step(0, True)


def test_step_repeats_when_the_follower_lacks_the_leaders_epoch(tmp_path):
    # KIP-279: follower epochs 1,1,3,3; leader 1,1,2,2,4. Asking for 3 answers (2, 4): the
    # follower has no epoch 2, cuts its epoch 3 and asks again for 1.
    f = make_log(tmp_path / "f", [(1, "a"), (1, "b"), (3, "x"), (3, "y")])
    leader = make_log(tmp_path / "l", [(1, "a"), (1, "b"), (2, "c"), (2, "d"), (4, "e")])
    assert leader_epoch_step(f, *leader_epoch_answer(leader, 3), hw=0) == Step(2, False)
    assert become_follower(f, 0, leader, "leader-epoch") == 2
    fetch_all(f, leader)
    assert content(f) == content(leader)


def test_step_stops_when_it_cannot_progress(tmp_path):
    f = make_log(tmp_path / "f", [(1, "a"), (1, "b")])
    # an answer naming an epoch above the request (not one our leaders send) truncates nothing
    assert leader_epoch_step(f, 5, 1, hw=0) == Step(2, True)


def kip101_scenario_1(tmp_path, mode):
    """KIP-101 scenario 1, "high watermark truncation followed by immediate leader election".

    A leads epoch 1 and writes m1, m2; B fetches both, so A's high watermark reaches 2 and
    m2 is acknowledged (acks=all); B has not yet learned it (its high watermark is 1). B
    restarts and becomes a follower of A again, then A dies and B is elected."""
    a = make_log(tmp_path / f"a-{mode}", [(1, "m1"), (1, "m2")])
    b = make_log(tmp_path / f"b-{mode}", [(1, "m1"), (1, "m2")])
    acknowledged = ["m1", "m2"]
    become_follower(b, hw=1, leader=a, mode=mode)           # B's restart: becomeFollower(A)
    # A dies before B fetches again: B is elected with the log it has
    return [r.payload for r in b.records], acknowledged


def test_kip101_scenario_1_truncate_to_hw_loses_an_acknowledged_record(tmp_path):
    b_log, acked = kip101_scenario_1(tmp_path, "truncate-to-hw")
    assert b_log == ["m1"]                                   # the new leader lost m2
    assert not set(acked) <= set(b_log)


def test_kip101_scenario_1_leader_epoch_keeps_it(tmp_path):
    b_log, acked = kip101_scenario_1(tmp_path, "leader-epoch")
    assert b_log == ["m1", "m2"]


def kip101_scenario_2(tmp_path, mode):
    """KIP-101 scenario 2, "replica divergence on restart after multiple hard failures".

    A leads epoch 1 with m1, m2 and high watermark 2; B had m2 only in its page cache, and
    both lose power. B comes back first, is elected (epoch 2) and writes m3 at offset 1.
    A comes back and follows B."""
    a = make_log(tmp_path / f"a-{mode}", [(1, "m1"), (1, "m2")])
    b = make_log(tmp_path / f"b-{mode}", [(1, "m1")])          # m2 was never flushed on B
    b.append(Record(1, 2, DATA, "m3"))
    b.flush()
    become_follower(a, hw=2, leader=b, mode=mode)
    fetch_all(a, b)
    return content(a), content(b)


def test_kip101_scenario_2_truncate_to_hw_leaves_the_replicas_diverged(tmp_path):
    a, b = kip101_scenario_2(tmp_path, "truncate-to-hw")
    assert a == [(1, "m1"), (1, "m2")] and b == [(1, "m1"), (2, "m3")]
    assert a != b                                            # same offset, different records


def test_kip101_scenario_2_leader_epoch_converges(tmp_path):
    a, b = kip101_scenario_2(tmp_path, "leader-epoch")
    assert a == b == [(1, "m1"), (2, "m3")]
