"""Share group membership in the pure core (coordinator/core/share/coordinator.py) with a fake clock:
docs/spec/share-groups.md#heartbeat, #assignor, #describe-and-coexistence, #durable-state."""

from __future__ import annotations

import uuid

from coordinator.core import RequestContext, RequestRef
from coordinator.core.consumer import TopicsSnapshot
from coordinator.core.runtime.shard import GroupShard
from coordinator.core.runtime.timer_keys import ShareSessionKey
from coordinator.records import RecordType, decode_record_versions
from protocol import messages as m
from protocol.error_codes import ErrorCode

T = uuid.UUID("00000000-0000-0000-0000-0000000000aa")
TOPICS = TopicsSnapshot.of({"t": (T, 2)})


def ctx(now: int = 0, version: int = 1) -> RequestContext:
    return RequestContext(version, now, RequestRef(object()), "client", "127.0.0.1")


def shard() -> GroupShard:
    return GroupShard(new_uuid=lambda: "uuid")


def beat(s: GroupShard, member: str, epoch: int, topics: list[str] | None = None, group: str = "g", now: int = 0):
    out = s.share_group_heartbeat(m.ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                                                subscribed_topic_names=topics), ctx(now), TOPICS)
    s.replay_all(out.records)
    return out


def partitions(response) -> list[int]:
    return sorted(p for tp in response.assignment.topic_partitions for p in tp.partitions)


def test_three_members_share_two_partitions_and_every_partition_has_a_member():
    s = shard()
    for name in ("a", "b", "c"):
        beat(s, name, 0, ["t"])
    held = {name: partitions(beat(s, name, 0, ["t"]).response) for name in ("a", "b", "c")}
    assert all(len(p) == 1 for p in held.values())
    assert {p for ps in held.values() for p in ps} == {0, 1}


def test_epochs_leave_and_fencing():
    s = shard()
    first = beat(s, "a", 0, ["t"]).response
    assert first.error_code == 0 and first.member_epoch == 2 and partitions(first) == []
    assert first.heartbeat_interval_ms == 5000
    second = beat(s, "a", 2).response  # the share-partitions are initialized now: assigned one epoch later
    assert (second.member_epoch, partitions(second)) == (3, [0, 1])
    assert beat(s, "a", 3).response.assignment is None  # nothing changed: no assignment sent
    assert beat(s, "a", 7).response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert beat(s, "x", 1).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    left = beat(s, "a", -1).response
    assert (left.error_code, left.member_epoch, left.heartbeat_interval_ms) == (0, -1, 0)
    assert beat(s, "a", -1).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(s, "a", -1, group="nope").response.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_share_partition_is_initialized_once_and_assigned_one_epoch_later():
    """docs/spec/share-groups.md#heartbeat: Kafka's maybeCreateInitializeShareGroupStateRequest, then
    initializedAssignmentPending bumping the group epoch on the next heartbeat."""
    s = shard()
    joined = beat(s, "a", 0, ["t", "missing"])
    kinds = [decode_record_versions(r.key, r.value) for r in joined.records]
    assert kinds[-1].record_type == RecordType.SHARE_GROUP_STATE_PARTITION_METADATA  # last in the batch
    (topic,) = kinds[-1].value.initialized_topics
    assert (topic.topic_id, topic.topic_name, topic.partitions) == (T, "t", [0, 1])
    assert kinds[-1].value.initializing_topics == [] and kinds[-1].value.deleting_topics == []
    assert partitions(joined.response) == []
    again = beat(s, "a", 2)
    assert RecordType.SHARE_GROUP_STATE_PARTITION_METADATA not in {
        decode_record_versions(r.key, r.value).record_type for r in again.records}  # written once
    assert partitions(again.response) == [0, 1]
    # a restart replays record 15: the partitions stay initialized and assigned, nothing is rewritten
    loaded = GroupShard.from_log([*joined.records, *again.records], new_uuid=lambda: "uuid")
    newcomer = beat(loaded, "b", 0, ["t"])
    assert partitions(newcomer.response) == [0] or partitions(newcomer.response) == [1]
    assert RecordType.SHARE_GROUP_STATE_PARTITION_METADATA not in {
        decode_record_versions(r.key, r.value).record_type for r in newcomer.records}
    # more partitions: the new one is initialized, then assigned
    grown = TopicsSnapshot.of({"t": (T, 3)})
    epochs = {"a": 3, "b": 4}
    for member in ("b", "b", "a"):  # b initializes partition 2, its next heartbeat assigns it
        out = loaded.share_group_heartbeat(m.ShareGroupHeartbeatRequest(
            group_id="g", member_id=member, member_epoch=epochs[member]), ctx(), grown)
        loaded.replay_all(out.records)
        epochs[member] = out.response.member_epoch
    described = loaded.share_group_describe(m.ShareGroupDescribeRequest(group_ids=["g"]), ctx(), grown).response
    held = {p for member in described.groups[0].members for tp in member.assignment.topic_partitions
            for p in tp.partitions}
    assert held == {0, 1, 2}


def test_invalid_requests_are_refused_in_kafkas_order():
    s = shard()
    cases = [("", "", 0, ["t"], None), ("g", "a", -2, ["t"], "MemberEpoch is invalid."),  # Kafka: no message
             ("g", "a", 0, None, "SubscribedTopicNames must be set in first request.")]
    for group, member, epoch, topics, message in cases:
        request = m.ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                                               subscribed_topic_names=topics)
        response = s.share_group_heartbeat(request, ctx(), TOPICS).response
        assert (response.error_code, response.error_message) == (ErrorCode.INVALID_REQUEST, message)


def test_session_expiry_removes_the_member_and_reassigns():
    s = shard()
    out = beat(s, "a", 0, ["t"])
    assert ShareSessionKey("g", "a") in {op.key for op in out.timers}
    beat(s, "b", 0, ["t"])
    beat(s, "a", 3)
    expired = s.on_timer(ShareSessionKey("g", "a"), None, 50_000, TOPICS)
    s.replay_all(expired.records)
    assert [e.name for e in expired.events] == ["share_member_session_expired", "share_member_removed"]
    assert partitions(beat(s, "b", 0, ["t"]).response) == [0, 1]


def test_one_namespace_of_group_ids_with_classic_and_consumer_groups():
    s = shard()
    beat(s, "a", 0, ["t"])
    join = s.join_group(m.JoinGroupRequest(group_id="g", member_id="", protocol_type="consumer",
                                           session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                           protocols=[]), ctx(version=5), TOPICS).response
    assert join.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    consumer = s.consumer_group_heartbeat(m.ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="c", member_epoch=0, subscribed_topic_names=["t"], rebalance_timeout_ms=1000),
        ctx(), TOPICS).response
    assert consumer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    listed = s.list_groups(m.ListGroupsRequest(types_filter=["share"]), ctx(version=5), TOPICS).response
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [("g", "share", "Stable")]


def test_records_rebuild_the_group_and_delete_writes_tombstones():
    s = shard()
    written = [*beat(s, "a", 0, ["t"]).records, *beat(s, "b", 0, ["t"]).records]
    types = [decode_record_versions(r.key, r.value).record_type for r in written[:5]]
    assert types == [RecordType.SHARE_GROUP_MEMBER_METADATA, RecordType.SHARE_GROUP_METADATA,
                     RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                     RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT]
    loaded = GroupShard.from_log(written, new_uuid=lambda: "uuid")
    described = loaded.share_group_describe(m.ShareGroupDescribeRequest(group_ids=["g"]), ctx(), TOPICS).response
    original = s.share_group_describe(m.ShareGroupDescribeRequest(group_ids=["g"]), ctx(), TOPICS).response
    assert described == original and described.groups[0].assignor_name == "simple"
    assert beat(loaded, "a", described.groups[0].members[0].member_epoch).response.error_code == 0
    assert s.delete_groups(m.DeleteGroupsRequest(groups_names=["g"]), ctx(), TOPICS).response.results[0].error_code \
        == ErrorCode.NON_EMPTY_GROUP
    beat(s, "a", -1)
    beat(s, "b", -1)
    deleted = s.delete_groups(m.DeleteGroupsRequest(groups_names=["g"]), ctx(), TOPICS)
    assert deleted.response.results[0].error_code == 0
    assert all(r.value is None for r in deleted.records)
    assert [decode_record_versions(r.key, r.value).record_type for r in deleted.records][-3:] == [
        RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
        RecordType.SHARE_GROUP_METADATA]
    s.replay_all(deleted.records)
    gone = s.share_group_describe(m.ShareGroupDescribeRequest(group_ids=["g"]), ctx(), TOPICS).response
    assert gone.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
