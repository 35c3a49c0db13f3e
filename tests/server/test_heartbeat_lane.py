"""The heartbeat fast lane (coordinator/server/heartbeat_lane.py) answers exactly as dispatch does.

Two servers in this process, socket-free (as tests/bench/heartbeat_path.py drives one): one with
the lane, one whose connections send every frame through dispatch. Each example forms the same
group in both (member ids drawn from the same sequence), then feeds both the same frames, cut
into the same reads: heartbeats right and wrong (every version, stale generations, unknown and
fenced members, unknown groups, odd client ids, truncated and trailing bytes), other requests
between them, and a JoinGroup that starts a rebalance (or parks on the heartbeats' own
connection, so the frames behind it must wait). Both must write the same bytes, close the same
connections and end with the same group, session timers and request metrics. Runs in whichever
build the suite runs (compiled, or GROUPCOORD_PURE_PYTHON=1).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.server import dispatch, groups, heartbeat_lane
from coordinator.server.app import Server
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import (
    ConsumerProtocolSubscription,
    CreateTopicsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from tests.bench.heartbeat_path import open_connection, request
from tests.bench.in_process import start_server, stop_server

SESSION_TIMEOUT_MS = 30_000
CLOCK_S = 1_800_000_000.0
TOPIC = "lane-topic"
SUBSCRIPTION = ConsumerProtocolSubscription(topics=[TOPIC]).encode(0)


class Twins:
    """The two servers and their clock (the wall clock of dispatch, the lane and the runtime)."""

    def __init__(self, with_lane: Server, without_lane: Server) -> None:
        self.servers = (with_lane, without_lane)
        self.now = CLOCK_S
        self.groups = itertools.count()
        self.ids = [itertools.count(), itertools.count()]  # member ids, per server: reset per example
        for index, server in enumerate(self.servers):
            runtime = server.broker.groups
            make_shard = runtime._new_shard

            def deterministic_shard(make_shard: Any = make_shard, index: int = index) -> Any:
                shard = make_shard()
                shard.state.new_uuid = lambda: f"{next(self.ids[index]):08d}"
                return shard

            runtime._new_shard = deterministic_shard  # type: ignore[method-assign]

    def clock(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def event_loop_twins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[asyncio.AbstractEventLoop, Twins]]:
    loop = asyncio.new_event_loop()
    overrides = ["listeners=PLAINTEXT://127.0.0.1:0", "group.initial.rebalance.delay.ms=0", "log.level=WARNING"]

    async def start(name: str) -> Server:
        data = tmp_path_factory.mktemp(name)
        return await start_server([f"log.dirs={Path(data)}", *overrides], tune_gc=False)

    with_lane = loop.run_until_complete(start("lane"))
    without_lane = loop.run_until_complete(start("dispatch"))
    for server in (with_lane, without_lane):  # the topic the groups commit offsets of
        loop.run_until_complete(request(*open_connection(server, 29_999), ApiKey.CREATE_TOPICS, CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)])))
    without_lane.heartbeat_lane = None
    twins = Twins(with_lane, without_lane)
    modules: list[Any] = [dispatch, groups, heartbeat_lane]
    clocks = [module._wall_clock for module in modules]
    for module in modules:
        module._wall_clock = twins.clock
    try:
        yield loop, twins
    finally:
        for module, clock in zip(modules, clocks, strict=True):
            module._wall_clock = clock
        for server in twins.servers:
            loop.run_until_complete(stop_server(server))
        loop.close()


def join_request(group: str, member_id: str, instance_id: str | None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS, rebalance_timeout_ms=60_000,
                            member_id=member_id, group_instance_id=instance_id, protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                                 metadata=SUBSCRIPTION)])


async def form_group(server: Server, group: str) -> list[tuple[str, str | None, int]]:
    """A Stable group of a dynamic member and a static one: (member id, instance id, generation)."""
    conns = [open_connection(server, 30_000 + i) for i in range(2)]
    first = await request(*conns[0], ApiKey.JOIN_GROUP, join_request(group, "", None))  # MEMBER_ID_REQUIRED
    instance_ids = [None, "static-1"]
    joined = await asyncio.gather(
        request(*conns[0], ApiKey.JOIN_GROUP, join_request(group, first.member_id, None)),
        request(*conns[1], ApiKey.JOIN_GROUP, join_request(group, "", "static-1")))
    generation = joined[0].generation_id
    members = [r.member_id for r in joined]
    assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in members]
    await asyncio.gather(*(request(conn, transport, ApiKey.SYNC_GROUP, SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=m, group_instance_id=i, protocol_type="consumer",
        protocol_name="range", assignments=assignments if m == joined[0].leader else []))
        for (conn, transport), m, i in zip(conns, members, instance_ids, strict=True)))
    return [(m, i, generation) for m, i in zip(members, instance_ids, strict=True)]


# ---- the frames of an example

heartbeat_ops = st.tuples(
    st.just("heartbeat"),
    st.integers(0, 4),  # version
    st.sampled_from(["group"] * 4 + ["unknown-group", ""]),
    st.sampled_from([0, 1, 2]),  # member: the dynamic one, the static one, an unknown id
    st.sampled_from([0, 0, 0, 1, -1]),  # generation offset
    st.sampled_from(["own", "none", "other", "unknown"]),  # group instance id (v3+)
    st.sampled_from([None, "bench", "klïent", ""]),  # client id
    st.sampled_from([""] * 6 + ["truncated", "trailing"]),
)
other_ops = st.tuples(st.sampled_from(["describe", "commit", "join-elsewhere", "join-here"]))
ops = st.lists(st.one_of(heartbeat_ops, heartbeat_ops, heartbeat_ops, other_ops), min_size=1, max_size=40)


def frames_of(ops: list[tuple[Any, ...]], group: str, members: list[tuple[str, str | None, int]]
              ) -> list[tuple[str, bytes]]:
    """(connection, frame) in sending order: "hb" is the heartbeats' connection, "other" a second one."""
    frames: list[tuple[str, bytes]] = []
    correlation = itertools.count(7)
    for op in ops:
        if op[0] == "heartbeat":
            _, version, which_group, member, offset, instance, client_id, damage = op
            member_id, own_instance, generation = members[member] if member < 2 else ("unknown-member", None, 1)
            instance_id = {"own": own_instance, "none": None, "other": members[1 - member % 2][1],
                           "unknown": "nobody"}[instance]
            gid = {"group": group, "unknown-group": group + "-x", "": ""}[which_group]
            frame = encode_request(ApiKey.HEARTBEAT, version, next(correlation), client_id, HeartbeatRequest(
                group_id=gid, generation_id=generation + offset, member_id=member_id,
                group_instance_id=instance_id if version >= 3 else None))
            if damage == "truncated":
                frame = (len(frame) - 6).to_bytes(4, "big") + frame[4:-2]
            elif damage == "trailing":
                frame = (len(frame) - 4 + 3).to_bytes(4, "big") + frame[4:] + b"\x00\x01\x02"
            frames.append(("hb", frame))
        elif op[0] == "commit":  # written to the group's partition: later answers wait for the write
            frames.append(("other", encode_request(ApiKey.OFFSET_COMMIT, 8, next(correlation), "c", OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=members[0][2], member_id=members[0][0], topics=[
                    OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
                        OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0,
                                                                         committed_offset=len(frames))])]))))
        elif op[0] == "describe":
            frames.append(("hb", encode_request(ApiKey.DESCRIBE_GROUPS, 5, next(correlation), "c",
                                                DescribeGroupsRequest(groups=[group]))))
        else:  # a new member joins: the group prepares a rebalance; its JoinGroup parks on its connection
            frames.append(("hb" if op[0] == "join-here" else "other", encode_request(
                ApiKey.JOIN_GROUP, 9, next(correlation), "c", join_request(group, "", f"new-{len(frames)}"))))
    return frames


def reads_of(frames: list[tuple[str, bytes]], cuts: list[int]) -> list[tuple[str, bytes]]:
    """Consecutive frames of one connection joined into reads, then cut at `cuts` (fractions)."""
    reads: list[tuple[str, bytes]] = []
    for conn, frame in frames:
        if reads and reads[-1][0] == conn:
            reads[-1] = (conn, reads[-1][1] + frame)
        else:
            reads.append((conn, frame))
    out: list[tuple[str, bytes]] = []
    for i, (conn, data) in enumerate(reads):
        cut = cuts[i % len(cuts)] * len(data) // 1000 if cuts else 0
        out += [(conn, part) for part in (data[:cut], data[cut:]) if part]
    return out


def metrics_of(server: Server) -> dict[str, Any]:
    metrics = server.broker.metrics
    return {"requests": dict(metrics.requests.values), "heartbeats": dict(metrics.heartbeats.values),
            "timed": {key: series.count for key, series in metrics.request_time.series.items()}}


def counted_since(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    return {name: {key: value - before[name].get(key, 0) for key, value in counts.items()
                   if value != before[name].get(key, 0)} for name, counts in after.items()}


def state_of(server: Server, group_id: str) -> tuple[Any, ...]:
    runtime = server.broker.groups
    _, shard = runtime.shard_for(group_id)
    group = shard.state.groups.classic(group_id)
    assert group is not None
    timers = sorted((str(key[1]), value) for key, value in runtime.deadlines.items()
                    if getattr(key[1], "group_id", None) == group_id)
    return (group.state, group.generation_id, sorted(group.members), sorted(group.static_members.items()),
            group.leader_id, timers)


async def run_example(twins: Twins, ops: list[tuple[Any, ...]], cuts: list[int]) -> None:
    group = f"lane-{next(twins.groups)}"
    outcomes = []
    for index, server in enumerate(twins.servers):
        twins.ids[index] = itertools.count()
        members = await form_group(server, group)
        twins.now += 1.0
        frames = frames_of(ops, group, members)
        conns = {"hb": open_connection(server, 40_000), "other": open_connection(server, 40_001)}
        before = metrics_of(server)
        for step, (name, data) in enumerate(reads_of(frames, cuts)):
            twins.now = CLOCK_S + step * 0.25  # the same clock at each read in both servers
            conn, _ = conns[name]
            conn.data_received(data)
        # Compared before the loop runs again: what waits for a write (or a parked join) still waits.
        written = {name: b"".join(transport.written) for name, (_, transport) in conns.items()}
        closed = {name: conn.closed for name, (conn, _) in conns.items()}
        outcomes.append((written, closed, state_of(server, group), counted_since(before, metrics_of(server))))
        await asyncio.sleep(0)  # the waiting answers' tasks start, to be cancelled as their connections close
        for conn, _ in conns.values():
            conn.connection_lost(None)
        twins.now = CLOCK_S
    with_lane, without_lane = outcomes
    assert with_lane[0] == without_lane[0]
    assert with_lane[1] == without_lane[1]
    assert with_lane[2] == without_lane[2]
    assert with_lane[3] == without_lane[3]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=ops, cuts=st.lists(st.integers(0, 1000), max_size=5))
def test_lane_answers_as_dispatch_does(event_loop_twins: tuple[asyncio.AbstractEventLoop, Twins],
                                       ops: list[tuple[Any, ...]], cuts: list[int]) -> None:
    loop, twins = event_loop_twins
    loop.run_until_complete(run_example(twins, ops, cuts))


def test_lane_answers_the_common_heartbeat(event_loop_twins: tuple[asyncio.AbstractEventLoop, Twins]) -> None:
    """The lane is taken (not only agreed with): a stable group's heartbeats leave dispatch's count
    of requests built untouched, and every version's answer is the encoded HeartbeatResponse."""
    loop, twins = event_loop_twins
    server = twins.servers[0]

    async def scenario() -> None:
        group = f"lane-{next(twins.groups)}"
        members = await form_group(server, group)
        conn, transport = open_connection(server, 40_002)
        before = next(dispatch._request_ids)
        frames = frames_of([("heartbeat", v, "group", 0, 0, "own", "bench", "") for v in range(5)], group,
                              members)
        conn.data_received(b"".join(frame for _, frame in frames))
        assert next(dispatch._request_ids) == before + 1  # no request went through dispatch
        expected = [encode_response_frame(7 + v, v) for v in range(5)]
        assert transport.take_frames() == expected
        conn.connection_lost(None)

    loop.run_until_complete(scenario())


def encode_response_frame(correlation_id: int, version: int) -> bytes:
    from protocol.frames import encode_response
    from protocol.messages import HeartbeatResponse

    return encode_response(correlation_id, ApiKey.HEARTBEAT, version, HeartbeatResponse(0, 0))[4:]

