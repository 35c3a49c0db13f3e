"""GroupShard with consumer groups (KIP-848) next to classic ones: dispatch, offsets, admin APIs, replay."""

from __future__ import annotations

import uuid
from typing import Any

from coordinator.core import GroupShard, Outcome, RequestContext, RequestRef
from coordinator.core.consumer import TopicsSnapshot
from coordinator.records import Record
from protocol import messages as m
from protocol.error_codes import ErrorCode
from tests.core.consumer_group_context import CountingBytes
from tests.core.helpers import handle

TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_DNS, "t")
TOPICS = TopicsSnapshot.of({"t": (TOPIC_ID, 3)}, version=1)


class ShardContext:
    def __init__(self) -> None:
        self.shard = GroupShard(new_uuid=lambda: "u", random_bytes=CountingBytes())
        self.log: list[Record] = []

    def send(self, request: Any, version: int) -> Outcome:
        out = handle(self.shard, request, RequestContext(version, 0, RequestRef(1), "c", "h"), TOPICS)
        for record in out.records:
            self.shard.replay(record)
            self.log.append(record)
        return out

    def join(self, group_id: str = "g") -> m.ConsumerGroupHeartbeatResponse:
        return self.send(m.ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=["t"], topic_partitions=[]), 0).response

    def commit(self, member_id: str, epoch: int, version: int = 9) -> int:
        partition = m.OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=42)
        out = self.send(m.OffsetCommitRequest(group_id="g", member_id=member_id, generation_id_or_member_epoch=epoch,
                                              topics=[m.OffsetCommitRequest.OffsetCommitRequestTopic(
                                                  name="t", partitions=[partition])]), version)
        return out.response.topics[0].partitions[0].error_code

    def assert_replay_matches(self) -> None:
        rebuilt = GroupShard.from_log(self.log)
        assert rebuilt.durable_view() == self.shard.durable_view()


def test_member_commits_with_its_epoch_and_the_offset_is_stored_with_classic_offsets():
    ctx = ShardContext()
    joined = ctx.join()
    assert ctx.commit(joined.member_id, joined.member_epoch + 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert ctx.commit(joined.member_id, joined.member_epoch, version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert ctx.commit(joined.member_id, joined.member_epoch) == ErrorCode.NONE
    assert ctx.shard.state.offsets["g"][("t", 0)].offset == 42
    assert ctx.shard.state.groups.classic("g") is None  # the commit's replay made no simple classic group
    fetch = m.OffsetFetchRequest(groups=[m.OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="g", member_id=joined.member_id, member_epoch=joined.member_epoch, topics=None)])
    [group] = ctx.send(fetch, 9).response.groups
    assert (group.error_code, group.topics[0].partitions[0].committed_offset) == (ErrorCode.NONE, 42)
    ctx.assert_replay_matches()


def test_list_groups_shows_consumer_groups_and_describe_groups_reports_them_dead():
    ctx = ShardContext()
    ctx.join()
    listed = ctx.send(m.ListGroupsRequest(), 5).response.groups
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [("g", "consumer", "consumer")]
    [described] = ctx.send(m.DescribeGroupsRequest(groups=["g"]), 5).response.groups
    assert described.group_state == "Dead"


def test_delete_groups_refuses_a_non_empty_consumer_group_and_deletes_an_empty_one_with_its_offsets():
    ctx = ShardContext()
    joined = ctx.join()
    ctx.commit(joined.member_id, joined.member_epoch)
    [result] = ctx.send(m.DeleteGroupsRequest(groups_names=["g"]), 2).response.results
    assert result.error_code == ErrorCode.NON_EMPTY_GROUP
    ctx.send(m.ConsumerGroupHeartbeatRequest(group_id="g", member_id=joined.member_id, member_epoch=-1), 0)
    [result] = ctx.send(m.DeleteGroupsRequest(groups_names=["g"]), 2).response.results
    assert result.error_code == ErrorCode.NONE
    assert list(ctx.shard.state.groups.consumer_groups()) == [] and ctx.shard.state.offsets == {}
    ctx.assert_replay_matches()
