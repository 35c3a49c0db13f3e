"""LeaveGroup for classic groups.

Version notes: v0-2 one top-level MemberId; v3+ a batch of (MemberId,
GroupInstanceId) with per-member results (KIP-345); MemberId "" with an
instance id removes that static member (admin path); v5 per-member Reason (KIP-800).
"""

from __future__ import annotations

from coordinator.core.classic.guards import ensure_member
from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.classic.rebalance import (
    answer_parked_with_unknown_member,
    maybe_complete_join,
    prepare_rebalance,
)
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import HeartbeatKey
from coordinator.records import RemovalCause, member_removal_record
from protocol.error_codes import ErrorCode
from protocol.messages import LeaveGroupRequest, LeaveGroupResponse

S = GroupState
MemberResponse = LeaveGroupResponse.MemberResponse
Identity = tuple[str, str | None, str | None]  # member id, group instance id, reason


def leave_group(st: ShardState, req: LeaveGroupRequest, ctx: RequestContext) -> Outcome:
    version = ctx.api_version
    if st.loading:
        return Outcome(response=LeaveGroupResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    if not req.group_id:
        return Outcome(response=LeaveGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID))
    identities = leave_group_identities(req, version)

    group = st.groups.classic(req.group_id)
    if group is None:
        return Outcome(response=leave_group_response(version, [(i, ErrorCode.UNKNOWN_MEMBER_ID) for i in identities]))
    if group.state is S.DEAD:
        return Outcome(response=LeaveGroupResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))

    fx = Effects(ctx.now_ms, ctx.ref)
    results: list[tuple[Identity, ErrorCode]] = []
    for identity in identities:
        code, removed = _leave_one(group, identity, fx)
        results.append((identity, code))
        if removed is not None:
            fx.records.append(member_removal_record(
                group.group_id, "LeaveGroup", removed.member_id, removed.group_instance_id,
                leave_cause(identity, ctx.client_id, removed.client_id), identity[2], ctx.now_ms))
    left = [identity for identity, code in results if code is ErrorCode.NONE]
    if left:
        # Counts pending members and removals by instance id too (a Kafka quirk kept on purpose).
        reasons = "; ".join(f"{m or i}: {r or 'not provided'}" for m, i, r in left)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            prepare_rebalance(group, f"Leaving group: {reasons}", fx, st.config)
        elif group.state is S.PREPARING_REBALANCE:
            maybe_complete_join(group, fx)
    return fx.outcome(leave_group_response(version, results))


def leave_group_identities(req: LeaveGroupRequest, version: int) -> list[Identity]:
    """Who leaves: v0-2 one top-level member id, v3+ the batch (reasons from v5)."""
    if version <= 2:
        return [(req.member_id, None, None)]
    return [(m.member_id, m.group_instance_id, m.reason if version >= 5 else None) for m in req.members]


# The reason text Kafka's AdminClient.removeMembersFromConsumerGroup sends (its DEFAULT_LEAVE_GROUP_REASON,
# followed by ": " and the caller's reason when one is given).
ADMIN_REMOVAL_REASON = "member was removed by an admin"


def leave_cause(identity: Identity, requester_client_id: str, member_client_id: str) -> RemovalCause:
    """Whether a LeaveGroup is the member leaving or an admin removing it. Kafka does not record the
    difference; the request shows it: an admin names a static member by instance id alone, sends
    the AdminClient's reason text, or comes from another client id than the member's."""
    member_id, _, reason = identity
    if not member_id or (reason or "").startswith(ADMIN_REMOVAL_REASON) or requester_client_id != member_client_id:
        return RemovalCause.REMOVED
    return RemovalCause.LEFT


def _leave_one(group: ClassicGroup, identity: Identity, fx: Effects) -> tuple[ErrorCode, Member | None]:
    """Removes one member; returns the error code and the removed member (None for a pending member,
    which never was in a generation, so no record tells of it)."""
    member_id, instance_id, reason = identity
    if not member_id:
        mapped = group.static_member_id(instance_id)
        if mapped is None:
            return ErrorCode.UNKNOWN_MEMBER_ID, None
        member = group.members[mapped]
        _remove_current_member(group, member, reason, fx)
        return ErrorCode.NONE, member
    if member_id in group.pending_join_members:
        group.remove(member_id)
        fx.cancel(HeartbeatKey(group.group_id, member_id))
        return ErrorCode.NONE, None
    try:
        member = ensure_member(group, member_id, instance_id)
    except ApiError as exc:
        return exc.code, None
    _remove_current_member(group, member, reason, fx)
    return ErrorCode.NONE, member


def _remove_current_member(group: ClassicGroup, member: Member, reason: str | None, fx: Effects) -> None:
    fx.cancel(HeartbeatKey(group.group_id, member.member_id))
    answer_parked_with_unknown_member(member, fx)
    group.remove(member.member_id)
    fx.event("member_left", group.group_id, member_id=member.member_id,
             group_instance_id=member.group_instance_id, reason=reason or "not provided")


def leave_group_response(version: int, results: list[tuple[Identity, ErrorCode]]) -> LeaveGroupResponse:
    if version <= 2:
        first_error = next((code for _, code in results if code is not ErrorCode.NONE), ErrorCode.NONE)
        return LeaveGroupResponse(error_code=first_error)
    return LeaveGroupResponse(members=[
        MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=code)
        for (member_id, instance_id, _), code in results
    ])
