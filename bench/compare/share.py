"""The share group workload of `make bench-compare` (KIP-932): records delivered and acknowledged
through a share group of three members, and the ShareFetch round trips' p50/p99.

As tests/bench/share_groups.py does for groupcoord alone, but on every broker alike: each member
joins with ShareGroupHeartbeat (and keeps heartbeating at the interval the broker gives), waits
until the group's partitions are assigned, opens its share session, then, once the records are
produced, loops ShareFetch (MaxRecords 500, MaxWaitMs 200) over its assigned partitions with the
previous fetch's records acknowledged ACCEPT in it, as the Java client's implicit mode does; the
last ones go in a ShareAcknowledge. The figure runs from the first fetch after the produce to the
last acknowledgement. A broker that does not advertise ShareGroupHeartbeat has no share groups.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from typing import Any

from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    CreateTopicsRequest,
    MetadataRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)

HOST = "127.0.0.1"
ACCEPT = 1
Fetch = ShareFetchRequest
Ack = ShareAcknowledgeRequest
ASSIGNMENT_TIMEOUT_S = 60


class NoShareGroups(RuntimeError):
    """The broker has no share groups (ShareGroupHeartbeat not advertised)."""


def _member_id() -> str:
    """Kafka parses share member ids as Uuids (base64url, 22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def _create_topic(wire: Wire, name: str, partitions: int) -> uuid.UUID:
    created = await wire.request(ApiKey.CREATE_TOPICS, CreateTopicsRequest(timeout_ms=10_000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]))
    code = created.topics[0].error_code
    if code != ErrorCode.NONE:
        raise RuntimeError(f"CreateTopics {name}: {ErrorCode(code).name}")
    deadline = time.monotonic() + 30
    while True:  # until the broker's metadata has the topic with all its partitions (Kafka's lags its controller)
        metadata = await wire.request(ApiKey.METADATA, MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False),
            version=min(12, wire.version(ApiKey.METADATA)))
        topic = metadata.topics[0]
        if topic.error_code == 0 and len(topic.partitions) == partitions:
            return topic.topic_id
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} not in the metadata after 30 s")
        await asyncio.sleep(0.05)  # poll interval


class _Member:
    def __init__(self, wire: Wire, group: str, topic: str, topic_id: uuid.UUID) -> None:
        self.wire, self.group, self.topic, self.topic_id = wire, group, topic, topic_id
        self.member_id = _member_id()
        self.epoch = 0
        self.interval_s = 5.0
        self.partitions: list[int] = []
        self.session_epoch = 0
        self.pending: dict[int, list[tuple[int, int]]] = {}
        self.latencies: list[float] = []
        self.lock = asyncio.Lock()  # heartbeats and fetches share the connection: one request at a time

    async def heartbeat(self) -> None:
        async with self.lock:
            response = await self.wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, ShareGroupHeartbeatRequest(
                group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
                subscribed_topic_names=[self.topic] if self.epoch == 0 else None))
        if response.error_code != 0:
            raise RuntimeError(f"ShareGroupHeartbeat: {ErrorCode(response.error_code).name}")
        self.epoch = response.member_epoch
        self.interval_s = response.heartbeat_interval_ms / 1000
        if response.assignment is not None:
            self.partitions = sorted(p for tp in response.assignment.topic_partitions if tp.topic_id == self.topic_id
                                     for p in tp.partitions)

    async def keep_heartbeating(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.heartbeat()

    def held(self) -> int:
        return sum(last - first + 1 for ranges in self.pending.values() for first, last in ranges)

    async def fetch(self) -> tuple[int, int]:
        """One ShareFetch carrying the previous one's acknowledgements: the records it accepted, and
        the records it acquired."""
        accepted = self.held()
        parts = [Fetch.FetchPartition(partition_index=p, acknowledgement_batches=[
            Fetch.AcknowledgementBatch(first, last, [ACCEPT]) for first, last in self.pending.get(p, [])])
            for p in sorted({*self.partitions, *self.pending})]
        request = Fetch(group_id=self.group, member_id=self.member_id, share_session_epoch=self.session_epoch,
                        max_wait_ms=200, min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                        topics=[Fetch.FetchTopic(topic_id=self.topic_id, partitions=parts)], forgotten_topics_data=[])
        async with self.lock:
            started = time.perf_counter()
            response = await self.wire.request(ApiKey.SHARE_FETCH, request, version=min(
                2, self.wire.version(ApiKey.SHARE_FETCH)))
            self.latencies.append(time.perf_counter() - started)
        if response.error_code != 0:
            raise RuntimeError(f"ShareFetch: {ErrorCode(response.error_code).name} {response.error_message}")
        self.session_epoch += 1
        self.pending = {}
        for topic in response.responses:
            for p in topic.partitions:
                if p.acknowledge_error_code != 0 or p.error_code != 0:
                    raise RuntimeError(f"ShareFetch partition {p.partition_index}: ack "
                                       f"{ErrorCode(p.acknowledge_error_code).name}, {ErrorCode(p.error_code).name}")
                if p.acquired_records:
                    self.pending[p.partition_index] = [(a.first_offset, a.last_offset) for a in p.acquired_records]
        return accepted, self.held()

    async def acknowledge_rest(self) -> int:
        if not self.pending:
            return 0
        accepted = self.held()
        request = Ack(group_id=self.group, member_id=self.member_id, share_session_epoch=self.session_epoch,
                      topics=[Ack.AcknowledgeTopic(topic_id=self.topic_id, partitions=[
                          Ack.AcknowledgePartition(partition_index=p, acknowledgement_batches=[
                              Ack.AcknowledgementBatch(first, last, [ACCEPT]) for first, last in ranges])
                          for p, ranges in sorted(self.pending.items())])])
        async with self.lock:
            response: Any = await self.wire.request(ApiKey.SHARE_ACKNOWLEDGE, request, version=min(
                2, self.wire.version(ApiKey.SHARE_ACKNOWLEDGE)))
        codes = [p.error_code for t in response.responses for p in t.partitions]
        if response.error_code != 0 or any(codes):
            raise RuntimeError(f"ShareAcknowledge: {response.error_code} {codes}")
        self.session_epoch += 1
        self.pending = {}
        return accepted


def _produce(port: int, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": f"{HOST}:{port}", "acks": "all", "linger.ms": 5, "log_level": 0})
    for i in range(records):
        producer.produce(topic, value=b"x" * 100, partition=i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0:
        raise RuntimeError("the produce did not complete within 60 s")


async def share_groups(port: int, records: int = 20_000, members: int = 3, partitions: int = 2) -> dict[str, float]:
    wires = [await Wire.connect(HOST, port) for _ in range(members)]
    tasks: list[asyncio.Task[None]] = []
    try:
        if ApiKey.SHARE_GROUP_HEARTBEAT not in wires[0].versions or ApiKey.SHARE_FETCH not in wires[0].versions:
            raise NoShareGroups("no share groups (ShareGroupHeartbeat/ShareFetch not advertised)")
        run = uuid.uuid4().hex[:8]
        topic = f"bench-share-{run}"
        topic_id = await _create_topic(wires[0], topic, partitions)
        group = f"bench-share-group-{run}"
        team = [_Member(w, group, topic, topic_id) for w in wires]
        deadline = time.monotonic() + ASSIGNMENT_TIMEOUT_S
        # Kafka assigns a share-partition only once its state is initialized: heartbeat until every
        # member holds partitions and together they hold all of them.
        while True:
            for m in team:
                await m.heartbeat()
            held = {p for m in team for p in m.partitions}
            if all(m.partitions for m in team[:partitions]) and len(held) == partitions:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"share group not assigned after {ASSIGNMENT_TIMEOUT_S} s: "
                                   f"{[m.partitions for m in team]}")
            await asyncio.sleep(0.1)  # poll interval
        tasks = [asyncio.create_task(m.keep_heartbeating()) for m in team]
        team = [m for m in team if m.partitions]  # a member left without partitions does not fetch
        for m in team:
            if (await m.fetch())[1]:  # opens the share session (the partitions start at the end: nothing yet)
                raise RuntimeError("records acquired before any was produced")
        await asyncio.to_thread(_produce, port, topic, records, partitions)
        for m in team:
            m.latencies.clear()
        accepted = acquired = 0
        started = time.perf_counter()

        async def loop(m: _Member) -> None:
            nonlocal accepted, acquired
            while acquired < records:
                done, taken = await m.fetch()
                accepted, acquired = accepted + done, acquired + taken
            accepted += await m.acknowledge_rest()

        await asyncio.gather(*(loop(m) for m in team))
        seconds = time.perf_counter() - started
        if accepted != records:
            raise RuntimeError(f"accepted {accepted} records of {records}")
        latencies = [t for m in team for t in m.latencies]
        return {"share_records_per_s": records / seconds,
                "share_fetch_p50_ms": _percentile(latencies, 0.5) * 1000,
                "share_fetch_p99_ms": _percentile(latencies, 0.99) * 1000}
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(w.close() for w in wires))
