"""Heartbeat for classic groups. Called often: builds the Outcome directly, one timer op.

Version notes: v3 group instance id (KIP-345); v4 flexible.
"""

from __future__ import annotations

from coordinator.core.errors import ApiError
from coordinator.core.guards import ensure_generation, ensure_member
from coordinator.core.outcome import Outcome, RequestContext, Schedule
from coordinator.core.shard_state import ShardState
from coordinator.core.state import GroupState
from coordinator.core.timer_keys import heartbeat_key
from protocol.error_codes import ErrorCode
from protocol.messages import HeartbeatRequest, HeartbeatResponse

S = GroupState


def heartbeat(st: ShardState, req: HeartbeatRequest, ctx: RequestContext) -> Outcome:
    if st.loading:
        return Outcome(response=HeartbeatResponse(error_code=ErrorCode.NONE))  # accepted blindly while loading
    try:
        code, session_timeout_ms = _check(st, req, ctx.api_version)
    except ApiError as exc:
        return Outcome(response=HeartbeatResponse(error_code=exc.code))
    deadline = ctx.now_ms + session_timeout_ms
    return Outcome(response=HeartbeatResponse(error_code=code),
                   timers=[Schedule(heartbeat_key(req.group_id, req.member_id), deadline)])


def _check(st: ShardState, req: HeartbeatRequest, version: int) -> tuple[ErrorCode, int]:
    if not req.group_id:
        raise ApiError(ErrorCode.INVALID_GROUP_ID)
    group = st.groups.get(req.group_id)
    if group is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state is S.DEAD:
        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    member = ensure_member(group, req.member_id, req.group_instance_id if version >= 3 else None)
    ensure_generation(group, req.generation_id)
    if group.state is S.EMPTY:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
    # During a join phase the old generation is still current: keep the session, ask to rejoin.
    code = ErrorCode.REBALANCE_IN_PROGRESS if group.state is S.PREPARING_REBALANCE else ErrorCode.NONE
    return code, member.session_timeout_ms
