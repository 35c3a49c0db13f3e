"""KIP-814 over the wire: a static leader of a Stable group restarts (JoinGroup with member id "").

No client installed here speaks JoinGroup v9 (kafka-python 3.0.12 sends v7, librdkafka v5, kafkajs
v5), so this drives the real server with the project's codec: v9 takes the SkipAssignment path,
v8 keeps the pre-KIP behaviour, and in both the generation does not move.
"""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    JoinGroupRequest,
    SyncGroupRequest,
)

SUBSCRIPTION = ConsumerProtocolSubscription(topics=["orders"]).encode(0)
ASSIGNMENT = ConsumerProtocolAssignment(assigned_partitions=[
    ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[0, 1, 2])]).encode(0)


def _join(wire, group: str, member_id: str, version: int):  # type: ignore[no-untyped-def]
    return wire.request(ApiKey.JOIN_GROUP, version, JoinGroupRequest(
        group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id=member_id,
        group_instance_id="leader-instance", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)]))


def _sync(wire, group: str, member_id: str, generation: int, assignments: list):  # type: ignore[no-untyped-def]
    return wire.request(ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id, group_instance_id="leader-instance",
        protocol_type="consumer", protocol_name="range", assignments=assignments))


def _stable_group(connect, server, group: str) -> tuple[str, int]:
    wire = connect(server)
    joined = _join(wire, group, "", 9)
    assert joined.error_code == ErrorCode.NONE and joined.leader == joined.member_id
    synced = _sync(wire, group, joined.member_id, joined.generation_id, [
        SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=ASSIGNMENT)])
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, ASSIGNMENT)
    wire.close()  # the "process" dies without LeaveGroup, as a static member does
    return joined.member_id, joined.generation_id


@pytest.fixture
def server(server_factory):
    return server_factory("group.initial.rebalance.delay.ms=0")


def test_v9_static_leader_rejoin_skips_the_assignment_and_keeps_the_generation(server, connect):
    old_id, generation = _stable_group(connect, server, "kip814-v9")
    wire = connect(server)
    rejoined = _join(wire, "kip814-v9", "", 9)
    assert rejoined.error_code == ErrorCode.NONE
    assert rejoined.skip_assignment is True
    assert rejoined.member_id != old_id and rejoined.leader == rejoined.member_id
    assert rejoined.generation_id == generation
    assert [(m.member_id, m.group_instance_id, m.metadata) for m in rejoined.members] == [
        (rejoined.member_id, "leader-instance", SUBSCRIPTION)]
    # The leader skips computing an assignment: its SyncGroup carries none and collects the old one.
    synced = _sync(wire, "kip814-v9", rejoined.member_id, rejoined.generation_id, [])
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, ASSIGNMENT)
    # The replaced member id is fenced.
    stale = _join(connect(server), "kip814-v9", old_id, 9)
    assert stale.error_code == ErrorCode.FENCED_INSTANCE_ID


def test_v8_static_leader_rejoin_keeps_the_old_behaviour_without_a_rebalance(server, connect):
    old_id, generation = _stable_group(connect, server, "kip814-v8")
    wire = connect(server)
    rejoined = _join(wire, "kip814-v8", "", 8)
    assert rejoined.error_code == ErrorCode.NONE
    assert rejoined.skip_assignment is False  # not on the wire before v9: the default
    assert rejoined.leader == old_id and rejoined.member_id != old_id  # leadership hidden from an old client
    assert rejoined.members == [] and rejoined.generation_id == generation
    synced = _sync(wire, "kip814-v8", rejoined.member_id, rejoined.generation_id, [])
    assert (synced.error_code, synced.assignment) == (ErrorCode.NONE, ASSIGNMENT)
