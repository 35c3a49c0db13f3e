"""SyncGroup for classic groups: the leader's assignment is persisted and handed out.

Version notes: v3 group instance id (KIP-345); v5 protocol type and name in
request and response (KIP-559), mandatory in the request.
"""

from __future__ import annotations

from coordinator.core.classic.guards import ensure_generation, ensure_member
from coordinator.core.classic.model import ClassicGroup, Parked
from coordinator.core.classic.rebalance import (
    propagate_assignment,
    schedule_sync_check_if_done,
)
from coordinator.core.classic.responses import sync_response
from coordinator.core.classic.state import GroupState, transition_to
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import group_metadata_record, group_metadata_value
from protocol.error_codes import ErrorCode
from protocol.messages import SyncGroupRequest

S = GroupState


def sync_group(st: ShardState, req: SyncGroupRequest, ctx: RequestContext) -> Outcome:
    version = ctx.api_version
    try:
        group = _validate(st, req, version)
    except ApiError as exc:
        return Outcome(response=sync_response(version, exc.code))

    fx = Effects(ctx.now_ms, ctx.ref)
    member = group.members[req.member_id]
    if group.state is S.COMPLETING_REBALANCE:
        member.awaiting_sync = Parked(ctx.ref, version)
        schedule_sync_check_if_done(group, member.member_id, fx)
        if group.is_leader(member.member_id):
            _store_leader_assignment(group, req, fx)
        return fx.outcome()  # followers stay parked until the leader's assignment arrives

    # Stable: a follower after the leader, or a replaced static member, gets the stored assignment.
    schedule_sync_check_if_done(group, member.member_id, fx)
    return fx.outcome(sync_response(version, protocol_type=group.protocol_type,
                                    protocol_name=group.protocol_name, assignment=member.assignment))


def _validate(st: ShardState, req: SyncGroupRequest, version: int) -> ClassicGroup:
    if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    if not req.group_id:
        raise ApiError(ErrorCode.INVALID_GROUP_ID)
    group = st.groups.classic(req.group_id)
    if group is None or group.state is S.EMPTY:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state is S.DEAD:
        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    ensure_member(group, req.member_id, req.group_instance_id if version >= 3 else None)
    ensure_generation(group, req.generation_id)
    # KIP-559: values the client sent must match; absent ones (v0-4) are not checked.
    if req.protocol_type is not None and group.protocol_type is not None and req.protocol_type != group.protocol_type:
        raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if req.protocol_name is not None and group.protocol_name is not None and req.protocol_name != group.protocol_name:
        raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.state is S.PREPARING_REBALANCE:
        raise ApiError(ErrorCode.REBALANCE_IN_PROGRESS)
    return group


def _store_leader_assignment(group: ClassicGroup, req: SyncGroupRequest, fx: Effects) -> None:
    assignments = {a.member_id: a.assignment for a in req.assignments}
    for member in group.members.values():
        member.assignment = assignments.get(member.member_id, b"")  # members the leader left out get nothing
    fx.records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
    propagate_assignment(group, ErrorCode.NONE, fx)
    transition_to(group, S.STABLE, fx.now_ms, fx)
    fx.event("group_stable", group.group_id, generation_id=group.generation_id)
