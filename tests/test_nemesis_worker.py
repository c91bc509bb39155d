"""NemesisWorker: each fault op as an invoke then an info of process "nemesis"."""
import asyncio
import threading

import pytest

from nemesis.faults import Fault
from nemesis.worker import NemesisWorker, parse_op
from tests.nemesis_fakes import FakeController, FakeHistory, check_nemesis_pairs, make_controller


def run(coro):
    return asyncio.run(coro)


def worker(leader="n2", **kw):
    cluster, sim, db, c = make_controller(leader=leader, **kw)
    hist, seen = FakeHistory(), []
    return cluster, db, c, hist, NemesisWorker(c, hist, seen.append), seen


def test_parse_op():
    assert parse_op({"f": "start-kill", "value": {"kind": "one"}}) == ("start", Fault("kill", "one"))
    assert parse_op({"f": "stop-partition", "value": {"kind": "nodes", "slot": "lag"}}) == (
        "stop", Fault("partition", "nodes", slot="lag"))
    assert parse_op({"f": "start-flap", "value": {"kind": "bridge", "period_ms": 5}})[1].params == {
        "period_ms": 5}
    for bad, msg in [({"f": "heal-kill", "value": {"kind": "one"}}, "start-<family>"),
                     ({"f": "start-", "value": {"kind": "one"}}, "start-<family>"),
                     ({"f": 3, "value": {}}, "start-<family>"),
                     ({"f": "start-kill", "value": {}}, "with a kind"),
                     ({"f": "start-kill", "value": ["one"]}, "with a kind"),
                     ({"f": "start-kill", "value": {"kind": "one", "targets": "n1"}}, "list of node names"),
                     ({"f": "start-flood", "value": {"kind": "one"}}, "unknown nemesis 'flood'"),
                     ({"f": "start-kill", "value": {"kind": "all"}}, "unknown kill kind 'all'")]:
        with pytest.raises(ValueError, match=msg):
            parse_op(bad)


def test_start_then_stop_recorded_with_the_controllers_values():
    cluster, db, c, hist, w, seen = worker(leader="n2")
    out = run(w.invoke({"f": "start-kill", "value": {"kind": "leader"}}))
    assert out.type == "info" and out.error is None
    assert hist.ops == [
        {"index": 0, "type": "invoke", "process": "nemesis", "f": "start-kill", "value": {"kind": "leader"}},
        {"index": 1, "type": "info", "process": "nemesis", "f": "start-kill",
         "value": {"kind": "leader", "targets": ["n2"]}}]
    assert out.op is hist.ops[1] and db.running == set(cluster.nodes) - {"n2"}
    assert seen == [{"kill": ["n2"]}]
    run(w.invoke({"f": "stop-kill", "value": {"kind": "leader"}}))
    assert hist.ops[3]["value"] == {"kind": "leader", "targets": ["n2"]}
    assert db.running == set(cluster.nodes) and seen[-1] == {}
    check_nemesis_pairs(hist.ops)


def test_partition_value_carries_the_grudge():
    cluster, db, c, hist, w, seen = worker(leader="n1")
    run(w.invoke({"f": "start-partition", "value": {"kind": "isolate-leader"}}))
    done = hist.ops[1]
    assert done["value"]["targets"] == ["n1"] and done["value"]["grudge"]["n1"] == ["n2", "n3", "n4", "n5"]


def test_a_controller_error_is_an_info_with_the_error_naming_the_node():
    cluster, db, c, hist, w, seen = worker(leader="n3")
    db.down.add("n3")
    out = run(w.invoke({"f": "start-pause", "value": {"kind": "leader"}}))
    assert out.type == "info" and "n3" in out.error
    inv, done = check_nemesis_pairs(hist.ops)[0]
    assert done["f"] == "start-pause" and done["value"] == {"kind": "leader"} and "n3" in done["error"]
    assert seen == [{"pause": ["n3"]}]     # still held, so the stop (or heal_all) undoes it


@pytest.mark.parametrize("op,msg", [
    ({"f": "start-flood", "value": {"kind": "one"}}, "unknown nemesis 'flood'"),
    ({"f": "start-kill", "value": {"targets": ["n1"]}}, "with a kind"),
    ({"f": "start-kill", "value": None}, "with a kind"),
    ({"f": "explode", "value": {"kind": "one"}}, "start-<family>"),
    ({"f": "start-partition", "value": {"kind": "nodes", "targets": "n1"}}, "list of node names"),
])
def test_a_bad_op_is_recorded_with_an_error_and_nothing_applied(op, msg):
    cluster, db, c, hist, w, seen = worker()
    out = run(w.invoke(op))
    assert out.type == "info" and msg in out.error
    inv, done = check_nemesis_pairs(hist.ops)[0]
    assert inv["value"] == op["value"] and done["value"] == op["value"] and msg in done["error"]
    assert db.calls == [] and cluster.remote.calls == [] and c.active == {}


def test_the_controller_runs_off_the_event_loop_thread():
    cluster, db, c, hist, w, seen = worker()
    threads = []
    real = c.start
    c.start = lambda fault: threads.append(threading.current_thread()) or real(fault)
    run(w.invoke({"f": "start-kill", "value": {"kind": "one"}}))
    assert threads and threads[0] is not threading.main_thread()


def test_close_stops_every_active_fault_and_records_it():
    cluster, db, c, hist, w, seen = worker(leader="n4")
    run(w.invoke({"f": "start-kill", "value": {"kind": "leader"}}))
    run(w.invoke({"f": "start-partition", "value": {"kind": "nodes", "slot": "lag", "targets": ["n1"]}}))
    run(w.close())
    pairs = check_nemesis_pairs(hist.ops)
    assert [(i["f"], i["value"]) for i, _ in pairs[2:]] == [
        ("stop-kill", {"kind": "leader"}), ("stop-partition", {"kind": "nodes", "slot": "lag"})]
    assert pairs[2][1]["value"] == {"kind": "leader", "targets": ["n4"]}
    assert pairs[3][1]["value"]["targets"] == ["n1"]
    assert c.active == {} and db.running == set(cluster.nodes) and seen[-1] == {}
    n = len(hist.ops)
    run(w.close())                   # nothing left: nothing recorded
    assert len(hist.ops) == n


def test_close_records_a_failed_stop_with_its_error():
    cluster, db, c, hist, w, seen = worker(leader="n5")
    run(w.invoke({"f": "start-kill", "value": {"kind": "leader"}}))
    db.down.add("n5")
    run(w.close())
    inv, done = check_nemesis_pairs(hist.ops)[1]
    assert inv["f"] == "stop-kill" and "n5" in done["error"] and done["value"] == {"kind": "leader"}
    assert c.active == {"kill": ["n5"]}        # left for heal_all


def test_cancelled_while_the_controller_works_records_the_outcome_then_propagates():
    ctl, hist = FakeController(start_s=0.2), FakeHistory()
    w = NemesisWorker(ctl, hist)

    async def main():
        task = asyncio.create_task(w.invoke({"f": "start-kill", "value": {"kind": "one"}}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await w.close()
    run(main())
    pairs = check_nemesis_pairs(hist.ops)
    assert [(i["f"], d["value"]) for i, d in pairs] == [
        ("start-kill", {"kind": "one", "targets": ["n1"]}), ("stop-kill", {"kind": "one", "targets": ["n1"]})]
    assert ctl.calls == [("start", "kill"), ("stop", "kill")] and ctl.max_in_flight == 1


def test_an_op_without_f_is_recorded_with_an_error_not_a_crash():
    import asyncio

    from nemesis.worker import NemesisWorker
    from tests.nemesis_fakes import FakeHistory, make_controller

    _cluster, _sim, _db, c = make_controller()
    h = FakeHistory()
    out = asyncio.run(NemesisWorker(c, h).invoke({"value": {"kind": "one"}}))
    assert out.error and "start-<family>" in out.error
    assert [op["f"] for op in h.ops] == ["invalid", "invalid"] and h.ops[1]["error"] == out.error
