"""docs/spec/consumer-protocol.md#classic-members: LeaveGroup (the classic API) on a consumer group.

Each identity is handled like the classic API would (a static member may be named by instance id
alone, the admin path). Members of either protocol are removed (Kafka 4.4's
classicGroupLeaveToConsumerGroup no longer refuses consumer-protocol members), and each answer
carries the member id the request named. When the members left all speak the classic protocol the
group is downgraded to a classic group of them (Kafka's consumerGroupFenceMembers); otherwise each
removed member's cause record and tombstones come first, then the subscription metadata without them and one group
epoch bump.
"""

from __future__ import annotations

from coordinator.core.classic.leave import (
    Identity,
    leave_cause,
    leave_group_identities,
    leave_group_response,
)
from coordinator.core.consumer.leave import ensure_member, ensure_static_member
from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember
from coordinator.core.consumer.regex_subscriptions import unused_regex_tombstones
from coordinator.core.consumer.subscription import compute_subscription_metadata
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_timers import cancel_all_member_timers
from coordinator.core.migration.downgrade import downgrade_allowed_after_fencing_all, downgrade_group
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import member_removal_record
from coordinator.records.consumer import (
    consumer_group_epoch_record,
    member_removal_tombstones,
    subscription_metadata_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import LeaveGroupRequest


def classic_leave_group(state: ShardState, req: LeaveGroupRequest, ctx: RequestContext,
                        topics: TopicsView) -> Outcome:
    fx = Effects(ctx.now_ms, ctx.ref)
    group = state.groups.consumer_group(req.group_id)
    removed: dict[str, ConsumerMember] = {}
    results: list[tuple[Identity, ErrorCode]] = []
    for identity in leave_group_identities(req, ctx.api_version):
        try:
            member = _leaving_member(group, identity)
        except ApiError as exc:
            results.append((identity, exc.code))
            continue
        if member.member_id not in removed:
            removed[member.member_id] = member
            fx.records.append(member_removal_record(
                group.group_id, "LeaveGroup", member.member_id, member.instance_id,
                leave_cause(identity, ctx.client_id, member.client_id), identity[2], ctx.now_ms))
            fx.event("member_left_consumer_group_by_leave_group", group.group_id, member_id=member.member_id,
                     instance_id=member.instance_id, reason=identity[2] or "not provided")
        results.append((identity, ErrorCode.NONE))
    if removed and downgrade_allowed_after_fencing_all(state, group, removed):
        first, *others = removed
        try:  # Kafka's consumerGroupFenceMembers: the classic members left become a classic group
            downgrade_group(state, group, first, fx, topics, also_leaving=others)
            return fx.outcome(leave_group_response(ctx.api_version, results))
        except ApiError as exc:  # unparsable embedded protocol: the members are removed as usual
            fx.event("group_downgrade_failed", group.group_id, error=str(exc))
    if removed:
        for member_id in removed:
            fx.records.extend(member_removal_tombstones(group.group_id, member_id))
            cancel_all_member_timers(state, fx, group.group_id, member_id)
        gid = group.group_id
        remaining = [m for mid, m in group.members.items() if mid not in removed]
        fx.records.extend(unused_regex_tombstones(group, remaining))
        metadata = compute_subscription_metadata(remaining, topics)
        if metadata != group.subscription_metadata:
            fx.records.append(subscription_metadata_record(gid, metadata))
        fx.records.append(consumer_group_epoch_record(gid, group.group_epoch + 1))
    return fx.outcome(leave_group_response(ctx.api_version, results))


def _leaving_member(group: ConsumerGroup, identity: Identity) -> ConsumerMember:
    member_id, instance_id, _ = identity
    if instance_id is None:
        return ensure_member(group, member_id)
    member = group.static_member(instance_id)
    if member is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    # An empty member id names the static member by instance id alone (admin removal).
    return ensure_static_member(group, instance_id, member_id or member.member_id)
