"""A small in-process fake of our brokers' RPCs (docs/data-plane.md, "Broker RPCs") for the
queue client's tests: N asyncio servers on 127.0.0.1 sharing one state.

Each partition has a leader (a broker id, -1 for none), a log of values and a high
watermark (the log end unless a test holds it back). Only the leader answers Produce,
ConsumerFetch and ListOffsets; others say NOT_LEADER_OR_FOLLOWER. Tests script faults:
``errors[api_key]`` is a list of error codes the next requests of that api get (after
Produce with NOT_ENOUGH_REPLICAS_AFTER_APPEND or REQUEST_TIMED_OUT the record *is*
appended, as on the real broker); ``silent`` brokers read requests and never answer;
``drop`` brokers close the connection after reading one. ``requests`` records
``(broker id, api key, body)`` of every request received. ``images[broker id]`` is a
broker's own Metadata answer (e.g. an empty image after a restart) instead of the shared
state; a partition's ``epoch`` is its leader epoch, which NOT_LEADER_OR_FOLLOWER names with
the leader (KIP-951's hint).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses

from kraft.core import errors
from kraft.wire import api, frames

APPENDED_ANYWAY = {20, 7}     # NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT


@dataclasses.dataclass
class Partition:
    leader: int
    log: list = dataclasses.field(default_factory=list)
    hw: int | None = None        # None: the log end
    epoch: int = 0

    def high_watermark(self) -> int:
        return len(self.log) if self.hw is None else self.hw


class FakeBrokers:
    """Brokers with ids 1..n (use ``async with``); ``endpoints`` are their ``host:port``."""

    def __init__(self, n: int = 3, cluster_id: str = "c1"):
        self.ids = list(range(1, n + 1))
        self.cluster_id = cluster_id
        self.ports: dict[int, int] = {}
        self.servers: dict[int, asyncio.base_events.Server] = {}
        self.topics: dict[str, list[Partition]] = {}
        self.configs: dict[str, dict] = {}
        self.errors: dict[int, list[int]] = {}
        self.silent: set[int] = set()
        self.drop: set[int] = set()
        self.requests: list[tuple[int, int, dict]] = []
        self.images: dict[int, dict] = {}

    async def __aenter__(self) -> "FakeBrokers":
        for bid in self.ids:
            await self.start(bid)
        return self

    async def __aexit__(self, *exc) -> None:
        for bid in list(self.servers):
            await self.stop(bid)

    async def start(self, bid: int) -> None:
        srv = await asyncio.start_server(lambda r, w, b=bid: self._serve(b, r, w), "127.0.0.1",
                                         self.ports.get(bid, 0))
        self.ports[bid] = srv.sockets[0].getsockname()[1]
        self.servers[bid] = srv

    async def stop(self, bid: int) -> None:
        srv = self.servers.pop(bid)
        srv.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(srv.wait_closed(), 1)

    @property
    def endpoints(self) -> list[str]:
        return [f"127.0.0.1:{self.ports[b]}" for b in self.ids]

    def sent_to(self, api_key: int) -> list[int]:
        """The broker ids that received requests of ``api_key``, in order."""
        return [b for b, k, _ in self.requests if k == api_key]

    async def _serve(self, bid: int, reader, writer) -> None:
        try:
            while True:
                frame = await frames.read_frame(reader)
                if frame is None:
                    return
                self.requests.append((bid, frame["ApiKey"], frame["Body"]))
                if bid in self.drop:
                    return
                if bid in self.silent:
                    continue
                body = self.dispatch(bid, frame["ApiKey"], frame["Body"])
                writer.write(frames.encode({"CorrelationId": frame["CorrelationId"], "Body": body}))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    def _scripted(self, api_key: int) -> int | None:
        queue = self.errors.get(api_key)
        return queue.pop(0) if queue else None

    def dispatch(self, bid: int, key: int, body: dict) -> dict:
        if key == api.METADATA and bid in self.images:
            return self.images[bid]
        if key == api.METADATA:
            return {"ErrorCode": 0, "Brokers": [{"Id": b, "Host": "127.0.0.1", "Port": self.ports[b],
                                                 "Fenced": False} for b in self.ids],
                    "Topics": [{"Name": t, "Partitions": [{"Index": i, "Leader": p.leader, "LeaderEpoch": p.epoch,
                                                           "Isr": self.ids, "Replicas": self.ids}
                                                          for i, p in enumerate(ps)]}
                               for t, ps in self.topics.items()]}
        if key == 19:
            (t,) = body["Topics"]
            code = self._scripted(19)
            if code is None and t["Name"] in self.topics:
                code = 36
            if code is None:
                self.topics[t["Name"]] = [Partition(self.ids[i % len(self.ids)]) for i in range(t["NumPartitions"])]
                self.configs[t["Name"]] = t["Configs"]
            return {"Topics": [{"Name": t["Name"], "ErrorCode": code or 0}]}
        parts = self.topics.get(body["Topic"])
        if parts is None or not 0 <= body["Partition"] < len(parts):
            return {"ErrorCode": errors.UNKNOWN_TOPIC_OR_PARTITION}
        p = parts[body["Partition"]]
        if p.leader != bid:
            return {"ErrorCode": errors.NOT_LEADER_OR_FOLLOWER, "LeaderId": p.leader, "LeaderEpoch": p.epoch}
        code = self._scripted(key)
        if key == api.PRODUCE:
            if code is not None and code not in APPENDED_ANYWAY:
                return {"ErrorCode": code}
            p.log.append(body["Value"])
            return {"ErrorCode": code or 0, "BaseOffset": len(p.log) - 1 if body["Acks"] else -1,
                    "LeaderEpoch": 0}
        if code is not None:
            return {"ErrorCode": code}
        if key == api.CONSUMER_FETCH:
            off = body["Offset"]
            if off > len(p.log):
                return {"ErrorCode": errors.OFFSET_OUT_OF_RANGE}
            hw = p.high_watermark()
            return {"ErrorCode": 0, "HighWatermark": hw,
                    "Records": [[o, p.log[o]] for o in range(off, min(hw, off + body["MaxRecords"]))]}
        if key == api.LIST_OFFSETS:
            return {"ErrorCode": 0, "HighWatermark": p.high_watermark(), "LogEndOffset": len(p.log),
                    "LogStartOffset": 0}
        return {"ErrorCode": errors.INVALID_REQUEST}
