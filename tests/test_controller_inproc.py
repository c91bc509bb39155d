"""The controller RPCs through a real in-process quorum of 3 controllers (kraft/controller/service.py).

The test plays the brokers: it registers them, heartbeats for them (or stops, to
let a session expire) and sends AlterPartition as a partition leader would. Waits
use deadlines; nothing asserts on timing.
"""
from __future__ import annotations

import asyncio
import contextlib

from kraft.core import errors
from kraft.core.records import METADATA
from kraft.wire import api
from kraft.wire.client import ClientError, KraftClient
from tests.kraft_inproc import CLUSTER_ID, Running, make_configs

SESSION_MS = 1500
HEARTBEAT_S = 0.1


def client(r: Running) -> KraftClient:
    return KraftClient("127.0.0.1", r.cfg.listen_port, CLUSTER_ID, timeout_ms=3000)


async def eventually(pred, timeout_s: float = 10.0, what: str = "condition"):
    """Poll ``pred()`` (sync or async) until it returns something truthy; returns it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        v = pred()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return v
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def active(nodes: list[Running], exclude=()) -> Running:
    return await eventually(lambda: next((r for r in nodes if r not in exclude and r.server.controller.is_active()),
                                         None), what="an active controller")


class FakeBroker:
    """Registers with and heartbeats to whichever controller is active."""

    def __init__(self, bid: int, nodes: list[Running]):
        self.id, self.nodes, self.epoch = bid, nodes, -1
        self.alive = True
        self.fenced = True
        self._clients: dict[int, KraftClient] = {}
        self._lock = asyncio.Lock()           # a KraftClient carries one request at a time
        self._task: asyncio.Task | None = None

    async def call(self, key: int, body: dict) -> dict:
        """Send to each running controller until one does not answer NOT_CONTROLLER."""
        async with self._lock:
            return await self._call(key, body)

    async def _call(self, key: int, body: dict) -> dict:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while loop.time() < deadline:
            for r in self.nodes:
                if r.node is None or r.node.stopping:
                    continue
                c = self._clients.setdefault(r.cfg.node_id, client(r))
                try:
                    resp = await c.request(key, body)
                except ClientError:
                    continue
                if resp["ErrorCode"] != errors.NOT_CONTROLLER:
                    return resp
            await asyncio.sleep(0.05)
        raise TimeoutError("no active controller answered")

    async def register(self) -> int:
        resp = await self.call(api.BROKER_REGISTRATION, {"BrokerId": self.id, "Host": "127.0.0.1",
                                                         "Port": 20000 + self.id, "IncarnationId": f"b{self.id}"})
        assert resp["ErrorCode"] == errors.NONE, resp
        self.epoch = resp["BrokerEpoch"]
        return self.epoch

    async def heartbeat(self, offset: int | None = None) -> dict:
        offset = self.epoch if offset is None else offset
        resp = await self.call(api.BROKER_HEARTBEAT, {"BrokerId": self.id, "BrokerEpoch": self.epoch,
                                                      "CurrentMetadataOffset": offset})
        if resp["ErrorCode"] == errors.NONE:
            self.fenced = resp["IsFenced"]
        return resp

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            if self.alive:
                with contextlib.suppress(TimeoutError, ClientError):
                    await self.heartbeat()
            await asyncio.sleep(HEARTBEAT_S)

    async def close(self) -> None:
        if self._task:
            self._task.cancel()
        for c in self._clients.values():
            await c.close()


@contextlib.asynccontextmanager
async def cluster(tmp_path, brokers=(4, 5, 6)):
    nodes = [await Running(c).start() for c in make_configs(tmp_path, 3, broker_session_timeout_ms=SESSION_MS)]
    fakes = {b: FakeBroker(b, nodes) for b in brokers}
    try:
        yield nodes, fakes
    finally:
        for f in fakes.values():
            await f.close()
        for r in nodes:
            with contextlib.suppress(Exception):
                await r.crash()


async def all_unfenced(nodes, fakes) -> None:
    for f in fakes.values():
        await f.register()
        f.start()
    await eventually(lambda: all(not f.fenced for f in fakes.values()), what="brokers unfenced")


def image(r: Running):
    return r.node.metadata.image


def metadata_log(r: Running) -> list:
    return [x for x in r.node.log.records if x.type == METADATA]


async def create(nodes, fakes, name, partitions=1, rf=3, **configs) -> dict:
    f = next(iter(fakes.values()))
    return await f.call(api.CREATE_TOPICS, {"Topics": [{"Name": name, "NumPartitions": partitions,
                                                        "ReplicationFactor": rf, "Configs": configs}]})


def alter_body(f: FakeBroker, st, isr) -> dict:
    return {"BrokerId": f.id, "BrokerEpoch": f.epoch, "Topics": [{"Name": st.topic, "Partitions": [
        {"PartitionIndex": st.partition, "LeaderEpoch": st.leader_epoch, "PartitionEpoch": st.partition_epoch,
         "NewIsr": list(isr)}]}]}


def test_registration_heartbeat_create_alter_and_not_controller(tmp_path):
    async def run():
        async with cluster(tmp_path) as (nodes, fakes):
            leader = await active(nodes)
            f4 = fakes[4]
            epoch = await f4.register()
            rec = leader.node.log.records[epoch]       # committed before the answer; epoch = its offset
            assert rec.type == METADATA and rec.payload["type"] == "RegisterBrokerRecord"
            assert rec.payload["brokerId"] == 4 and epoch < leader.node.hw
            assert image(leader).brokers[4].fenced
            assert (await f4.heartbeat(offset=epoch - 1))["IsFenced"] is True     # not caught up yet
            assert (await f4.heartbeat())["IsFenced"] is False                    # caught up: unfenced
            assert not image(leader).brokers[4].fenced
            stale = await f4.call(api.BROKER_HEARTBEAT, {"BrokerId": 4, "BrokerEpoch": epoch + 100,
                                                         "CurrentMetadataOffset": epoch})
            assert stale["ErrorCode"] == errors.STALE_BROKER_EPOCH
            unknown = await f4.call(api.BROKER_HEARTBEAT, {"BrokerId": 9, "BrokerEpoch": 0,
                                                           "CurrentMetadataOffset": 0})
            assert unknown["ErrorCode"] == errors.STALE_BROKER_EPOCH
            # only 1 unfenced broker: replication factor 3 is refused
            resp = await create(nodes, fakes, "t")
            assert resp["Topics"][0]["ErrorCode"] == errors.INVALID_REPLICATION_FACTOR
            await all_unfenced(nodes, {b: f for b, f in fakes.items() if b != 4})
            resp = await create(nodes, fakes, "t", partitions=2, **{"min.insync.replicas": 2})
            assert resp["Topics"] == [{"Name": "t", "ErrorCode": errors.NONE}]
            img = image(leader)                          # committed and applied before the answer
            assert img.topics["t"].configs["min.insync.replicas"] == 2
            p0 = img.partitions[("t", 0)]
            assert sorted(p0.replicas) == [4, 5, 6] and p0.isr == p0.replicas and p0.leader == p0.replicas[0]
            assert img.partitions[("t", 1)].leader != p0.leader                  # round-robin
            again = await create(nodes, fakes, "t")
            assert again["Topics"][0]["ErrorCode"] == errors.TOPIC_ALREADY_EXISTS
            bad = await create(nodes, fakes, "u", rf=4)
            assert bad["Topics"][0]["ErrorCode"] == errors.INVALID_REPLICATION_FACTOR
            # every controller replays the same image
            await eventually(lambda: all(image(r).partitions == img.partitions for r in nodes), what="replay")

            # AlterPartition from the leader: shrink, then the errors
            lf = fakes[p0.leader]
            follower_id = p0.replicas[2]
            new_isr = [r for r in p0.isr if r != follower_id]
            resp = await lf.call(api.ALTER_PARTITION, alter_body(lf, p0, new_isr))
            part = resp["Topics"][0]["Partitions"][0]
            assert resp["ErrorCode"] == errors.NONE and part["ErrorCode"] == errors.NONE
            assert (part["Isr"], part["LeaderId"], part["LeaderEpoch"], part["PartitionEpoch"]) == (
                new_isr, p0.leader, 0, 1)
            assert image(leader).partitions[("t", 0)].isr == tuple(new_isr)
            last = metadata_log(leader)[-1].payload
            assert last["type"] == "PartitionChangeRecord" and last["isr"] == new_isr
            again = await lf.call(api.ALTER_PARTITION, alter_body(lf, p0, p0.isr))   # stale partition epoch
            assert again["Topics"][0]["Partitions"][0]["ErrorCode"] == errors.INVALID_UPDATE_VERSION
            st = image(leader).partitions[("t", 0)]
            nf = fakes[follower_id]
            not_leader = await nf.call(api.ALTER_PARTITION, alter_body(nf, st, st.isr))
            assert not_leader["Topics"][0]["Partitions"][0]["ErrorCode"] == errors.INVALID_REQUEST
            no_leader = await lf.call(api.ALTER_PARTITION, alter_body(lf, st, [follower_id]))
            assert no_leader["Topics"][0]["Partitions"][0]["ErrorCode"] == errors.INVALID_REQUEST
            stale = {**alter_body(lf, st, st.isr), "BrokerEpoch": lf.epoch + 1000}
            assert (await lf.call(api.ALTER_PARTITION, stale))["ErrorCode"] == errors.STALE_BROKER_EPOCH
            back = await lf.call(api.ALTER_PARTITION, alter_body(lf, st, list(p0.replicas)))
            assert back["Topics"][0]["Partitions"][0]["Isr"] == list(p0.replicas)

            # the followers answer NOT_CONTROLLER with the leader hint
            for r in nodes:
                if r is leader:
                    continue
                c = client(r)
                for key, body in [(api.BROKER_REGISTRATION, {"BrokerId": 7, "Host": "h", "Port": 1,
                                                             "IncarnationId": "x"}),
                                  (api.BROKER_HEARTBEAT, {"BrokerId": 4, "BrokerEpoch": epoch,
                                                          "CurrentMetadataOffset": epoch}),
                                  (api.CREATE_TOPICS, {"Topics": [{"Name": "v", "NumPartitions": 1,
                                                                   "ReplicationFactor": 1}]}),
                                  (api.ALTER_PARTITION, alter_body(lf, st, st.isr))]:
                    resp = await c.request(key, body)
                    assert resp["ErrorCode"] == errors.NOT_CONTROLLER, (key, resp)
                    assert resp["LeaderId"] == leader.cfg.node_id
                await c.close()
            assert "v" not in image(leader).topics and 7 not in image(leader).brokers
            assert all(not r.node.metadata.errors for r in nodes)
    asyncio.run(run())


def test_session_timeout_fences_and_moves_leadership_cleanly(tmp_path):
    async def run():
        async with cluster(tmp_path) as (nodes, fakes):
            leader = await active(nodes)
            await all_unfenced(nodes, fakes)
            assert (await create(nodes, fakes, "t"))["Topics"][0]["ErrorCode"] == errors.NONE
            p0 = image(leader).partitions[("t", 0)]
            dead = fakes[p0.leader]
            dead.alive = False                                  # its heartbeats stop
            await eventually(lambda: image(leader).brokers[dead.id].fenced, what="fencing")
            st = image(leader).partitions[("t", 0)]
            assert st.leader == p0.replicas[1] and st.isr == p0.replicas[1:]      # clean: next ISR replica
            assert (st.leader_epoch, st.partition_epoch) == (1, 1)
            # the FenceBrokerRecord and the partition change were appended in one batch
            recs = metadata_log(leader)
            i = next(i for i, x in enumerate(recs) if x.payload["type"] == "FenceBrokerRecord")
            assert recs[i].payload["id"] == dead.id
            assert recs[i + 1].payload["type"] == "PartitionChangeRecord" and recs[i + 1].offset == recs[i].offset + 1
            assert all(not f.fenced for f in fakes.values() if f is not dead)
            dead.alive = True                                   # it comes back: unfenced, not leader, not in ISR
            await eventually(lambda: not image(leader).brokers[dead.id].fenced, what="unfencing")
            st2 = image(leader).partitions[("t", 0)]
            assert st2 == st
    asyncio.run(run())


def test_last_isr_member_fenced_clean_offline_vs_unclean(tmp_path):
    async def run():
        async with cluster(tmp_path) as (nodes, fakes):
            leader = await active(nodes)
            await all_unfenced(nodes, fakes)
            for name, unclean, parts in [("clean", False, 1), ("dirty", True, 3)]:
                resp = await create(nodes, fakes, name, partitions=parts, rf=2,
                                    **{"unclean.leader.election.enable": unclean})
                assert resp["Topics"][0]["ErrorCode"] == errors.NONE
            img = image(leader)
            sole = img.partitions[("clean", 0)].leader
            # round-robin: each broker leads one of dirty's 3 partitions
            dirty = next(st for st in img.topic_partitions("dirty") if st.leader == sole)
            for st in (img.partitions[("clean", 0)], dirty):   # the leader becomes the sole ISR member
                resp = await fakes[sole].call(api.ALTER_PARTITION, alter_body(fakes[sole], st, [sole]))
                assert resp["Topics"][0]["Partitions"][0]["ErrorCode"] == errors.NONE
            assert image(leader).partitions[("clean", 0)].isr == (sole,)
            assert image(leader).partitions[("dirty", dirty.partition)].isr == (sole,)
            fakes[sole].alive = False
            await eventually(lambda: image(leader).brokers[sole].fenced, what="fencing")
            clean1 = image(leader).partitions[("clean", 0)]
            assert (clean1.leader, clean1.isr, clean1.leader_epoch) == (-1, (sole,), 1)      # offline
            dirty1 = image(leader).partitions[("dirty", dirty.partition)]
            other = next(r for r in dirty.replicas if r != sole)
            assert (dirty1.leader, dirty1.isr, dirty1.leader_epoch) == (other, (other,), 1)   # unclean
            for st in image(leader).topic_partitions("dirty"):
                assert st.leader != -1 and sole not in st.isr
            fakes[sole].alive = True                            # the last ISR member returns: clean again
            await eventually(lambda: image(leader).partitions[("clean", 0)].leader == sole, what="re-election")
            back = image(leader).partitions[("clean", 0)]
            assert (back.isr, back.leader_epoch) == ((sole,), 2)
            assert image(leader).partitions[("dirty", dirty.partition)].leader == other    # a live leader stays
    asyncio.run(run())


def test_new_active_controller_keeps_live_brokers_and_serves(tmp_path):
    async def run():
        async with cluster(tmp_path) as (nodes, fakes):
            first = await active(nodes)
            await all_unfenced(nodes, fakes)
            assert (await create(nodes, fakes, "t"))["Topics"][0]["ErrorCode"] == errors.NONE
            before = image(first)
            await first.crash()
            first.node.stopping = True
            second = await active(nodes, exclude=(first,))
            assert image(second).partitions == before.partitions and image(second).topics == before.topics
            assert (await create(nodes, fakes, "u", rf=3))["Topics"][0]["ErrorCode"] == errors.NONE
            # heartbeats go on to the new controller: the brokers keep their sessions past a timeout
            await asyncio.sleep(SESSION_MS / 1000.0 * 1.5)
            assert all(not b.fenced for b in image(second).brokers.values())
            assert "u" in image(second).topics
            # a broker that stops now is fenced by the new controller
            fakes[6].alive = False
            await eventually(lambda: image(second).brokers[6].fenced, what="fencing by the new controller")
            assert all(6 not in st.isr for st in image(second).partitions.values())
    asyncio.run(run())


def test_active_controller_writes_partition_changes_the_image_still_needs(tmp_path):
    """A FenceBrokerRecord committed without its partition changes (as when a controller
    dies between them) is followed up by the active controller's own change."""
    async def run():
        async with cluster(tmp_path) as (nodes, fakes):
            leader = await active(nodes)
            await all_unfenced(nodes, fakes)
            assert (await create(nodes, fakes, "t"))["Topics"][0]["ErrorCode"] == errors.NONE
            p0 = image(leader).partitions[("t", 0)]
            victim = fakes[p0.leader]
            victim.alive = False
            await leader.node.append_and_commit({"type": "FenceBrokerRecord", "id": victim.id,
                                                 "epoch": victim.epoch}, rtype=METADATA)
            await eventually(lambda: image(leader).partitions[("t", 0)].leader != p0.leader, what="re-election")
            st = image(leader).partitions[("t", 0)]
            assert st.leader == p0.replicas[1] and victim.id not in st.isr and st.leader_epoch == 1
            fences = [r for r in metadata_log(leader) if r.payload["type"] == "FenceBrokerRecord"]
            assert len(fences) == 1                     # ours: the change came from the follow-up
            assert all(not r.node.metadata.errors for r in nodes)
    asyncio.run(run())
