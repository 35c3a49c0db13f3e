"""docs/spec/consumer-protocol.md#classic-members: LeaveGroup (the classic API) on a consumer group.

Each identity is handled like the classic API would (a static member may be named by instance id
alone, the admin path), but only classic-protocol members can be removed this way; a
consumer-protocol member named here gets UNKNOWN_MEMBER_ID. Each removed member's cause record
and tombstones come first, then the subscription metadata without them and one group epoch bump for the batch.
"""

from __future__ import annotations

from coordinator.core.classic.leave import (
    Identity,
    leave_cause,
    leave_group_identities,
    leave_group_response,
)
from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember
from coordinator.core.consumer.state import ConsumerGroupsState
from coordinator.core.consumer.subscription import compute_subscription_metadata
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_sync import classic_member
from coordinator.core.migration.classic_timers import cancel_all_member_timers
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.records import member_removal_record
from coordinator.records.consumer import (
    consumer_group_epoch_record,
    member_removal_tombstones,
    subscription_metadata_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import LeaveGroupRequest


def classic_leave_group(state: ConsumerGroupsState, req: LeaveGroupRequest, ctx: RequestContext,
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
            fx.records.extend(member_removal_tombstones(group.group_id, member.member_id))
            cancel_all_member_timers(state, fx, group.group_id, member.member_id)
            fx.event("classic_member_left_consumer_group", group.group_id, member_id=member.member_id,
                     instance_id=member.instance_id, reason=identity[2] or "not provided")
        results.append(((member.member_id, identity[1], identity[2]), ErrorCode.NONE))
    if removed:
        gid = group.group_id
        remaining = [m for mid, m in group.members.items() if mid not in removed]
        metadata = compute_subscription_metadata(remaining, topics)
        if metadata != group.subscription_metadata:
            fx.records.append(subscription_metadata_record(gid, metadata))
        fx.records.append(consumer_group_epoch_record(gid, group.group_epoch + 1))
    return fx.outcome(leave_group_response(ctx.api_version, results))


def _leaving_member(group: ConsumerGroup, identity: Identity) -> ConsumerMember:
    member_id, instance_id, _ = identity
    if instance_id is None:
        return classic_member(group, member_id, None)
    member = group.static_member(instance_id)
    if member is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    # An empty member id names the static member by instance id alone (admin removal).
    return classic_member(group, member_id or member.member_id, instance_id)
