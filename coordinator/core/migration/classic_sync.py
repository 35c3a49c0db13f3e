"""docs/spec/consumer-protocol.md#classic-members: SyncGroup and Heartbeat of classic-protocol members inside a consumer
group.

Neither writes records. SyncGroup hands out the member's current assignment (the server assigned
it during JoinGroup) in the ConsumerProtocolAssignment version of the member's subscription.
Heartbeat tells the member to rejoin (REBALANCE_IN_PROGRESS) while it has something to catch up
on, and bounds that rejoin with a join timer.
"""

from __future__ import annotations

from coordinator.core.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    protocol_version,
    serialize_assignment,
)
from coordinator.core.classic.responses import sync_response
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.leave import ensure_member, ensure_static_member
from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from coordinator.core.consumer.timers import schedule_session_timeout
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_timers import schedule_join_timeout_if_absent
from coordinator.core.migration.downgrade import names_of
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import ClassicMemberSyncKey
from protocol.error_codes import ErrorCode
from protocol.messages import HeartbeatRequest, HeartbeatResponse, SyncGroupRequest


def classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = ensure_member(group, member_id)
    else:
        member = ensure_static_member(group, instance_id, member_id)
    if not member.uses_classic_protocol:
        raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic "
                                                              "protocol.")
    return member


def ensure_generation_is_member_epoch(member: ConsumerMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise ConsumerGroupError(ErrorCode.ILLEGAL_GENERATION,
                                 f"The request generation id {generation_id} is not equal to the member epoch "
                                 f"{member.member_epoch} of member {member.member_id}.")


def epoch_to_catch_up_with(group: ConsumerGroup) -> int:
    """The epoch a classic member behind which must rejoin: the target assignment epoch (KIP-1263).
    Kafka 3.9/4.0 compared with the group epoch, because there the rejoin computed the next
    target; with batched or offloaded runs the target can lag the group epoch, and rejoining before
    the new target exists would gain nothing but another REBALANCE_IN_PROGRESS. Without batching
    the two epochs are equal after every request, so the snapshot's behaviour is unchanged."""
    return group.assignment_epoch


def classic_sync_group(state: ShardState, req: SyncGroupRequest, ctx: RequestContext,
                       topics: TopicsView) -> Outcome:
    """The shell has checked group id, loading and the v5+ protocol fields."""
    fx = Effects(ctx.now_ms, ctx.ref)
    version = ctx.api_version
    try:
        group = state.groups.consumer_group(req.group_id)
        if not group.members:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        member = classic_member(group, req.member_id, req.group_instance_id if version >= 3 else None)
        ensure_generation_is_member_epoch(member, req.generation_id)
        _ensure_protocol(member, req.protocol_type, req.protocol_name)
        if epoch_to_catch_up_with(group) > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            # A new assignment exists: rejoin to get it. A member still revoking has rejoined already
            # and finishes its revocation first.
            schedule_join_timeout_if_absent(state, fx, group.group_id, member.member_id, member.rebalance_timeout_ms)
            return fx.outcome(sync_response(version, ErrorCode.REBALANCE_IN_PROGRESS))
    except ApiError as exc:
        return Outcome(response=sync_response(version, exc.code))
    assert member.classic is not None
    try:
        assignment_version = protocol_version(member.classic.subscription_metadata)
    except ValueError:  # Kafka: IllegalStateException
        return Outcome(response=sync_response(version, ErrorCode.UNKNOWN_SERVER_ERROR))
    fx.cancel(ClassicMemberSyncKey(group.group_id, member.member_id))
    schedule_session_timeout(fx, group.group_id, member.member_id, member.classic.session_timeout_ms)
    assignment = serialize_assignment(names_of(member.assigned_partitions, topics), assignment_version)
    return fx.outcome(sync_response(version, protocol_type=req.protocol_type, protocol_name=req.protocol_name,
                                    assignment=assignment))


def _ensure_protocol(member: ConsumerMember, protocol_type: str | None, protocol_name: str | None) -> None:
    assert member.classic is not None
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise ConsumerGroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"The protocol type {protocol_type} is not {CONSUMER_PROTOCOL_TYPE}.")
    if protocol_name is not None and protocol_name != member.classic.protocol_name:
        raise ConsumerGroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"The protocol name {protocol_name} is not {member.classic.protocol_name}, the one "
                                 "returned in the join response.")


def classic_heartbeat(state: ShardState, req: HeartbeatRequest, ctx: RequestContext) -> Outcome:
    fx = Effects(ctx.now_ms, ctx.ref)
    try:
        group = state.groups.consumer_group(req.group_id)
        member = classic_member(group, req.member_id, req.group_instance_id if ctx.api_version >= 3 else None)
        ensure_generation_is_member_epoch(member, req.generation_id)
    except ApiError as exc:
        return Outcome(response=HeartbeatResponse(error_code=exc.code))
    assert member.classic is not None
    schedule_session_timeout(fx, group.group_id, member.member_id, member.classic.session_timeout_ms)
    code = ErrorCode.NONE
    if (member.member_epoch < epoch_to_catch_up_with(group)
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased(group, member))):
        # Behind the group, revoking, or its missing partitions are free now: rejoin to move on.
        code = ErrorCode.REBALANCE_IN_PROGRESS
        schedule_join_timeout_if_absent(state, fx, group.group_id, member.member_id, member.rebalance_timeout_ms)
    return fx.outcome(HeartbeatResponse(error_code=code))


def waiting_on_unreleased(group: ConsumerGroup, member: ConsumerMember) -> bool:
    """Kafka's waitingOnUnreleasedPartition: a partition of its target it lacks is still held by another."""
    target = group.target_assignment.get(member.member_id, {})
    for topic_id, partitions in target.items():
        assigned = member.assigned_partitions.get(topic_id, frozenset())
        if any(p not in assigned and group.is_held(topic_id, p) for p in partitions):
            return True
    return False
