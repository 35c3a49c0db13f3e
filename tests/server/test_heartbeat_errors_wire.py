"""Heartbeat answers over the wire, every version, pipelined: the fast lane (coordinator/server/
heartbeat_lane.py) answers the good ones, dispatch the rest, in request order on one connection.

A Stable group of one static member on the real server: its heartbeats answer NONE; a stale
generation ILLEGAL_GENERATION; an unknown member or group UNKNOWN_MEMBER_ID; the member's instance
id with another member id FENCED_INSTANCE_ID (v3+, where the instance id is sent); once a second
member's JoinGroup starts a rebalance, REBALANCE_IN_PROGRESS.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

import pytest

from coordinator.cli import main as groupcoord
from protocol.api_keys import ApiKey
from protocol.client import decode_response, encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerProtocolSubscription,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from tests.conftest import STOP_TIMEOUT_S, ServerProcess, local_server
from tests.server.admin_wire import ensure_topic
from tests.server.conftest import KafkaWire

SUBSCRIPTION = ConsumerProtocolSubscription(topics=["orders"]).encode(0)
INSTANCE = "static-a"
VERSIONS = range(5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = local_server(tmp_path_factory.mktemp("heartbeat-wire"), "group.initial.rebalance.delay.ms=0").start()
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop(STOP_TIMEOUT_S)


def join(group: str, instance_id: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id=member_id,
                            group_instance_id=instance_id, protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)])


def stable_group(wire: KafkaWire, group: str) -> tuple[str, int]:
    joined = wire.request(ApiKey.JOIN_GROUP, 9, join(group, INSTANCE))
    assert joined.error_code == ErrorCode.NONE
    synced = wire.request(ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id, group_instance_id=INSTANCE,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"")]))
    assert synced.error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


def pipelined(wire: KafkaWire, requests: list[tuple[int, HeartbeatRequest]]) -> list[int]:
    """Send every (version, request) in one write; the error codes of the answers, checked in order."""
    correlation_ids = itertools.count(100)
    sent = [(next(correlation_ids), version, req) for version, req in requests]
    wire.send_raw(b"".join(encode_request(ApiKey.HEARTBEAT, version, cid, "hb-wire", req)
                           for cid, version, req in sent))
    codes = []
    for cid, version, _ in sent:
        got, response = decode_response(ApiKey.HEARTBEAT, version, wire.read_frame())
        assert got == cid
        codes.append(response.error_code)
    return codes


def heartbeat(group: str, generation: int, member_id: str, instance_id: str | None, version: int) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                            group_instance_id=instance_id if version >= 3 else None)


def test_heartbeat_answers_of_every_version_pipelined(server: ServerProcess,
                                                      connect: Callable[..., KafkaWire]) -> None:
    group = "hb-wire-errors"
    member_id, generation = stable_group(connect(server), group)
    cases: list[tuple[str, Callable[[int], HeartbeatRequest], Callable[[int], ErrorCode]]] = [
        ("member", lambda v: heartbeat(group, generation, member_id, INSTANCE, v), lambda v: ErrorCode.NONE),
        ("member without instance id", lambda v: heartbeat(group, generation, member_id, None, v),
         lambda v: ErrorCode.NONE),
        ("stale generation", lambda v: heartbeat(group, generation - 1, member_id, INSTANCE, v),
         lambda v: ErrorCode.ILLEGAL_GENERATION),
        ("unknown member", lambda v: heartbeat(group, generation, "nobody", None, v),
         lambda v: ErrorCode.UNKNOWN_MEMBER_ID),
        ("unknown group", lambda v: heartbeat(group + "-none", generation, member_id, None, v),
         lambda v: ErrorCode.UNKNOWN_MEMBER_ID),
        ("fenced instance id", lambda v: heartbeat(group, generation, "other-id", INSTANCE, v),
         lambda v: ErrorCode.FENCED_INSTANCE_ID if v >= 3 else ErrorCode.UNKNOWN_MEMBER_ID),
        ("unknown instance id", lambda v: heartbeat(group, generation, member_id, "static-z", v),
         lambda v: ErrorCode.UNKNOWN_MEMBER_ID if v >= 3 else ErrorCode.NONE),
    ]
    requests: list[tuple[int, HeartbeatRequest]] = []
    expected: list[tuple[str, int, ErrorCode]] = []
    for _ in range(3):  # the good ones between errors, several times over
        for name, build, code in cases:
            for version in VERSIONS:
                requests.append((version, build(version)))
                expected.append((name, version, code(version)))
    codes = pipelined(connect(server), requests)
    assert [(name, version, code) for (name, version, _), code in zip(expected, codes, strict=True)] == expected

    # A second member's JoinGroup (parked on its own connection) starts a rebalance.
    joining = connect(server)
    joining.send(ApiKey.JOIN_GROUP, 9, join(group, "static-b"))
    during = pipelined(connect(server), [(v, heartbeat(group, generation, member_id, INSTANCE, v)) for v in VERSIONS]
                       + [(v, heartbeat(group, generation - 1, member_id, INSTANCE, v)) for v in VERSIONS])
    assert during == [ErrorCode.REBALANCE_IN_PROGRESS] * 5 + [ErrorCode.ILLEGAL_GENERATION] * 5


def test_heartbeats_behind_a_parked_join_wait_for_it(server: ServerProcess, connect: Callable[..., KafkaWire]) -> None:
    """Kafka answers in order per connection: a heartbeat sent after a JoinGroup that parks is answered after it."""
    group = "hb-wire-order"
    member_id, generation = stable_group(connect(server), group)
    wire = connect(server)
    wire.send(ApiKey.JOIN_GROUP, 9, join(group, "static-b"))  # parks: the group prepares a rebalance
    wire.send(ApiKey.HEARTBEAT, 4, heartbeat(group, generation, member_id, INSTANCE, 4))
    # The member rejoins (on another connection): the join phase completes and answers both joins.
    rejoined = connect(server).request(ApiKey.JOIN_GROUP, 9, join(group, INSTANCE, member_id))
    assert rejoined.error_code == ErrorCode.NONE
    _, joined = wire.receive(ApiKey.JOIN_GROUP, 9)
    assert joined.error_code == ErrorCode.NONE
    _, answered = wire.receive(ApiKey.HEARTBEAT, 4)
    # Answered after the join completed: the old generation is no longer current.
    assert answered.error_code == ErrorCode.ILLEGAL_GENERATION
    assert joined.generation_id == generation + 1



def test_heartbeats_behind_commits_waiting_for_their_fsync_are_answered_after_them(
        server: ServerProcess, connect: Callable[..., KafkaWire]) -> None:
    """A connection goes on past commits that wait only for their fsync (their answers queue); a
    heartbeat the lane could answer at once must still come back after them, in request order."""
    group = "hb-wire-behind-commits"
    member_id, generation = stable_group(connect(server), group)
    wire = connect(server)
    ensure_topic(wire, "hb-behind", partitions=4)
    frames = []
    for i in range(6):  # commits and heartbeats alternating, all in one write
        frames.append(encode_request(ApiKey.OFFSET_COMMIT, 8, 200 + 2 * i, "hb-wire", OffsetCommitRequest(
            group_id=f"{group}-offsets", generation_id_or_member_epoch=-1, member_id="", topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name="hb-behind", partitions=[
                    OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=i)
                    for p in range(4)])])))
        frames.append(encode_request(ApiKey.HEARTBEAT, 4, 201 + 2 * i, "hb-wire",
                                     heartbeat(group, generation, member_id, INSTANCE, 4)))
    wire.send_raw(b"".join(frames))
    for i in range(6):
        got, committed = wire.receive(ApiKey.OFFSET_COMMIT, 8)
        assert got == 200 + 2 * i
        assert {p.error_code for t in committed.topics for p in t.partitions} == {ErrorCode.NONE}
        got, answered = wire.receive(ApiKey.HEARTBEAT, 4)
        assert got == 201 + 2 * i
        assert answered.error_code == ErrorCode.NONE


def test_heartbeats_need_read_on_the_group_when_acls_are_on(server_factory: Callable[..., ServerProcess],
                                                           connect: Callable[..., KafkaWire]) -> None:
    """With an authorizer every heartbeat is checked (the lane leaves them to dispatch): a member whose
    READ on the group is withdrawn is answered GROUP_AUTHORIZATION_FAILED from its next heartbeat on."""
    server = server_factory("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                            "group.initial.rebalance.delay.ms=0")
    group = "hb-wire-acl"
    acl = ["--allow-principal", "User:ANONYMOUS", "--operation", "Read", "--group", group]
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--add", *acl]) == 0
    wire = connect(server)
    deadline = time.monotonic() + 5
    describe = DescribeGroupsRequest(groups=[group])
    while wire.request(ApiKey.DESCRIBE_GROUPS, 5, describe).groups[0].error_code != ErrorCode.NONE:
        assert time.monotonic() < deadline, "the server did not apply the ACL"
        time.sleep(0.1)
    member_id, generation = stable_group(connect(server), group)
    beat = [(4, heartbeat(group, generation, member_id, INSTANCE, 4))]
    assert pipelined(wire, beat * 3) == [ErrorCode.NONE] * 3
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--remove", *acl]) == 0
    deadline = time.monotonic() + 5
    while pipelined(wire, beat) != [ErrorCode.GROUP_AUTHORIZATION_FAILED]:
        assert time.monotonic() < deadline, "the server did not apply the ACL change"
        time.sleep(0.1)
