"""docs/spec/consumer-protocol.md#leaving-fencing-timeouts: members leaving (-1), static members leaving for a while
(-2), fencing and timeouts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.model import (
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerMember,
)
from coordinator.core.consumer.regex_subscriptions import unused_regex_tombstones
from coordinator.core.consumer.responses import leave_response
from coordinator.core.consumer.subscription import compute_subscription_metadata
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_timers import cancel_all_member_timers
from coordinator.core.migration.downgrade import (
    downgrade_allowed_after_fencing,
    downgrade_group,
)
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import (
    ClassicMemberJoinKey,
    ClassicMemberSyncKey,
    RebalanceKey,
    SessionKey,
)
from coordinator.records import RemovalCause, member_removal_record
from coordinator.records.consumer import (
    consumer_group_epoch_record,
    current_assignment_record,
    member_removal_tombstones,
    subscription_metadata_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)


def ensure_consumer_group(state: ShardState, group_id: str) -> ConsumerGroup:
    group = state.groups.consumer(group_id)
    if group is not None:
        return group
    if group_id in state.groups:
        raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    # Kafka's consumerGroup(groupId), which the leave paths use: "Group", where a join or heartbeat
    # (getOrMaybeCreateConsumerGroup) says "Consumer group".
    raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")


def ensure_static_member(group: ConsumerGroup, instance_id: str, member_id: str) -> ConsumerMember:
    """The instance id must be known and held by this member id."""
    member = group.static_member(instance_id)
    if member is None:
        raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if member.member_id != member_id:
        raise ConsumerGroupError(
            ErrorCode.FENCED_INSTANCE_ID,
            f"Static member {member_id} with instance id {instance_id} was fenced by member {member.member_id}.")
    return member


def ensure_member(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def leave_group(state: ShardState, req: ConsumerGroupHeartbeatRequest, fx: Effects,
                topics: TopicsView) -> ConsumerGroupHeartbeatResponse:
    """A heartbeat with epoch -1 (leave for good) or -2 (static member, back soon)."""
    group = ensure_consumer_group(state, req.group_id)
    if req.instance_id is None:
        member = ensure_member(group, req.member_id)
    else:
        member = ensure_static_member(group, req.instance_id, req.member_id)
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # Kept with its partitions so a successor can take over; its session timer keeps running.
            leaving = replace(member, member_epoch=STATIC_LEAVE_EPOCH, partitions_pending_revocation={})
            fx.records.append(current_assignment_record(group.group_id, leaving))
            fx.records.append(member_removal_record(group.group_id, "ConsumerGroupHeartbeat", member.member_id,
                                                    member.instance_id, RemovalCause.STATIC_LEFT, None, fx.now_ms))
            fx.event("consumer_member_left_temporarily", group.group_id, member_id=member.member_id,
                     instance_id=req.instance_id)
            return leave_response(member.member_id, STATIC_LEAVE_EPOCH)
    fence_member(state, group, member, fx, topics, reason="left the group",
                 cause=RemovalCause.LEFT, api="ConsumerGroupHeartbeat")
    return leave_response(req.member_id, req.member_epoch)


def fence_member(state: ShardState, group: ConsumerGroup, member: ConsumerMember, fx: Effects,
                 topics: TopicsView, reason: str, cause: RemovalCause, api: str = "Timer") -> None:
    """Remove the member: its cause record, its tombstones, the subscription metadata without it, a
    group epoch bump; or, when it was the last consumer-protocol member among classic ones, downgrade
    the group (10.3)."""
    fx.records.append(member_removal_record(group.group_id, api, member.member_id, member.instance_id, cause,
                                            None, fx.now_ms))
    if downgrade_allowed_after_fencing(state, group, member.member_id):
        try:
            downgrade_group(state, group, member.member_id, fx, topics)
            return
        except ApiError as exc:  # unparsable embedded protocol: the member is removed as usual
            fx.event("group_downgrade_failed", group.group_id, error=str(exc))
    gid = group.group_id
    fx.records.extend(member_removal_tombstones(gid, member.member_id))
    remaining = [m for mid, m in group.members.items() if mid != member.member_id]
    fx.records.extend(unused_regex_tombstones(group, remaining))
    metadata = compute_subscription_metadata(remaining, topics)
    if metadata != group.subscription_metadata:
        fx.records.append(subscription_metadata_record(gid, metadata))
    fx.records.append(consumer_group_epoch_record(gid, group.group_epoch + 1))
    cancel_all_member_timers(state, fx, gid, member.member_id)
    fx.event("consumer_member_removed", gid, member_id=member.member_id, instance_id=member.instance_id,
             reason=reason, group_epoch=group.group_epoch + 1)


MemberTimerKey = SessionKey | RebalanceKey | ClassicMemberJoinKey | ClassicMemberSyncKey


def on_member_timer(state: ShardState, key: MemberTimerKey, data: Any, fx: Effects,
                    topics: TopicsView) -> None:
    """A session, rebalance, classic join or classic sync timer came due; stale timers (member gone,
    or moved on) do nothing."""
    group_id, member_id = key.group_id, key.member_id
    if isinstance(key, ClassicMemberJoinKey):
        state.classic_join_deadlines.pop((group_id, member_id), None)
    group = state.groups.consumer(group_id)
    member = None if group is None else group.members.get(member_id)
    if group is None or member is None:
        return
    if isinstance(key, SessionKey):
        # A static member that left with epoch -2 and did not come back left; the others crashed.
        cause = (RemovalCause.STATIC_LEAVE_EXPIRED if member.member_epoch == STATIC_LEAVE_EPOCH
                 else RemovalCause.SESSION_EXPIRED)
        fence_member(state, group, member, fx, topics, reason="session expired", cause=cause)
    elif isinstance(key, RebalanceKey):
        # (classic-protocol members are bounded by their join and sync timers instead, as in Kafka)
        if member.member_epoch == data and not member.uses_classic_protocol:
            fence_member(state, group, member, fx, topics,
                         reason=f"did not leave epoch {data} within its rebalance timeout",
                         cause=RemovalCause.REBALANCE_TIMEOUT)
    elif isinstance(key, ClassicMemberJoinKey):
        if member.uses_classic_protocol:
            fence_member(state, group, member, fx, topics, reason="the classic member failed to join within the "
                                                                  "rebalance timeout",
                         cause=RemovalCause.REBALANCE_TIMEOUT)
    elif member.uses_classic_protocol:
        fence_member(state, group, member, fx, topics, reason="the classic member failed to sync within the "
                                                              "rebalance timeout",
                     cause=RemovalCause.REBALANCE_TIMEOUT)
