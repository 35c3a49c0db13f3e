"""Assertions over whole outcomes (events are log material and are not compared)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.core import GroupShard, Outcome, RequestContext
from coordinator.core.consumer import TopicsView
from coordinator.core.runtime.shard import NO_TOPICS
from protocol import messages as m


def assert_outcome(out: Outcome, *, response: Any = None, records: list | None = None,
                   replies: list | None = None, timers: list | None = None) -> None:
    assert out.response == response
    assert list(out.records) == (records or [])
    assert list(out.replies) == (replies or [])
    assert list(out.timers) == (timers or [])


# What the shell's API handlers do, for tests that send any request: each API calls its shard method.
SHARD_CALLS: dict[type, Callable[[GroupShard, Any, RequestContext, TopicsView], Outcome]] = {
    m.JoinGroupRequest: GroupShard.join_group,
    m.SyncGroupRequest: GroupShard.sync_group,
    m.HeartbeatRequest: GroupShard.heartbeat,
    m.LeaveGroupRequest: GroupShard.leave_group,
    m.OffsetCommitRequest: GroupShard.offset_commit,
    m.OffsetFetchRequest: GroupShard.offset_fetch,
    m.OffsetDeleteRequest: GroupShard.offset_delete,
    m.DescribeGroupsRequest: GroupShard.describe_groups,
    m.ListGroupsRequest: GroupShard.list_groups,
    m.DeleteGroupsRequest: GroupShard.delete_groups,
    m.ConsumerGroupHeartbeatRequest: GroupShard.consumer_group_heartbeat,
    m.ConsumerGroupDescribeRequest: GroupShard.consumer_group_describe,
    m.TxnOffsetCommitRequest: GroupShard.txn_offset_commit,
}


def handle(shard: GroupShard, request: Any, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
    return SHARD_CALLS[type(request)](shard, request, ctx, topics)
