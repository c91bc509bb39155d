"""The ``power-loss`` fault (nemesis/power_loss.py): kill, then crash each target's lazyfs,
restart on stop; which runs mount disks for it (harness/run/disks.py)."""
import random

import pytest

from harness.config.resolved import resolve
from harness.config.run import RunConfig
from nemesis.controller import NemesisController
from nemesis.faults import Fault
from nemesis.power_loss import crash_settings
from tests.nemesis_fakes import FakeCluster, FakeDB


class FakeDisks:
    """Records crashes; a crash of a node whose process still runs is a test failure."""

    def __init__(self, db):
        self.db, self.crashes, self.synced = db, [], []

    def sync(self, node):
        self.synced.append(node)
        return {}

    def crash(self, node, torn=False, lost_renames=False, seed=None):
        assert node not in self.db.running, f"{node}'s disk crashed while its process ran"
        self.crashes.append((node, torn, lost_renames, seed))
        return {"dropped_bytes": 10, "torn": {"kept": 1} if torn else None, "reverted_files": ["log/x"],
                "namespace_undone": [], "namespace_kept": 0, "undo_errors": [], "seed": seed}


def make(leader="n2", disks=True):
    cluster = FakeCluster(3)
    db = FakeDB(cluster.nodes)
    d = FakeDisks(db) if disks else None
    return db, d, NemesisController(cluster, db, lambda: leader, random.Random(4), disks=d)


def test_power_loss_kills_then_crashes_the_disk_and_restarts_on_stop():
    db, disks, ctl = make()
    v = ctl.start(Fault("power-loss", "leader", params={"torn": True, "lost_renames": False}))
    assert v["targets"] == ["n2"] and v["torn"] is True and v["lost_renames"] is False
    assert v["lost"]["n2"]["dropped_bytes"] == 10 and v["lost"]["n2"]["torn"] == {"kept": 1}
    assert [c[:3] for c in disks.crashes] == [("n2", True, False)]
    assert db.calls[0] == ("kill", "n2") and "n2" not in db.running
    assert ctl.stop(Fault("power-loss", "leader"))["targets"] == ["n2"]
    assert "n2" in db.running


def test_settings_come_from_the_rng_unless_given_and_are_checked():
    draws = {tuple(crash_settings({}, random.Random(s)).values()) for s in range(20)}
    assert len(draws) == 4                                   # every combination is drawn
    assert crash_settings({"torn": False, "lost_renames": True}, random.Random(1)) == \
        {"torn": False, "lost_renames": True}
    with pytest.raises(ValueError, match="torn must be true or false"):
        crash_settings({"torn": "yes"}, random.Random(1))


def test_a_node_already_down_is_recorded_and_no_disks_is_a_clear_error():
    db, disks, ctl = make()
    db.running.discard("n1")
    v = ctl.start(Fault("power-loss", "nodes", targets=("n1", "n3")))
    assert v["no_process"] == ["n1"] and sorted(c[0] for c in disks.crashes) == ["n1", "n3"]
    _db, _d, bare = make(disks=False)
    with pytest.raises(ValueError, match="needs the nodes' data dirs on lazyfs"):
        bare.start(Fault("power-loss", "one"))


def test_runs_that_name_power_loss_get_disks():
    def families(**fields) -> frozenset[str]:       # the runner mounts disks when power-loss is one
        return resolve(RunConfig(seed=1, **fields)).nemesis.families
    assert families(nemesis=["kill", "power-loss:leader"]) == {"kill", "power-loss"}
    assert "power-loss" not in families(nemesis=["kill", "crash"])
    steps = [{"nemesis": "start-power-loss", "value": {"kind": "one"}}]
    assert "power-loss" in families(nemesis=[], scenario=steps)


def test_a_wipe_is_made_durable_on_power_loss_disks():
    # regression: a power loss after a wipe brought the old disk back (the old directory id
    # and quorum-state), since the wipe's rm -rf and mkdir were never fsynced
    class WipingDB(FakeDB):
        def wipe(self, node):
            self.kill(node)
            return {"down": False, "old_directory_id": "a", "new_directory_id": "b", "last_offset": 3}

    cluster = FakeCluster(3)
    db = WipingDB(cluster.nodes)
    disks = FakeDisks(db)
    ctl = NemesisController(cluster, db, lambda: "n1", random.Random(4), disks=disks)
    v = ctl.start(Fault("wipe", "nodes", targets=("n2",)))
    assert v["wiped"]["n2"]["new_directory_id"] == "b" and disks.synced == ["n2"]
