"""Builders of classic responses whose shape depends on the version (KIP-559 fields)."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.core.classic.model import ClassicGroup
from protocol.error_codes import ErrorCode
from protocol.messages import JoinGroupResponse, SyncGroupResponse

JoinMember = JoinGroupResponse.JoinGroupResponseMember


def join_response(
    version: int,
    error: ErrorCode = ErrorCode.NONE,
    *,
    member_id: str = "",
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    skip_assignment: bool = False,
    members: Iterable[JoinGroupResponse.JoinGroupResponseMember] = (),
) -> JoinGroupResponse:
    if version >= 7:
        name = protocol_name or None  # v7+: no protocol is null
    else:
        name, protocol_type = protocol_name or "", None  # before v7 the name is never null
    return JoinGroupResponse(
        error_code=error, generation_id=generation_id, protocol_type=protocol_type, protocol_name=name,
        leader=leader, skip_assignment=skip_assignment and version >= 9, member_id=member_id,
        members=list(members),
    )


def join_error(version: int, error: ErrorCode, member_id: str = "") -> JoinGroupResponse:
    return join_response(version, error, member_id=member_id)


def current_members(group: ClassicGroup) -> list[JoinGroupResponse.JoinGroupResponseMember]:
    """Every member with its metadata for the selected protocol (the leader's member list)."""
    return [JoinMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                       metadata=m.metadata(group.protocol_name)) for m in group.members.values()]


def join_success(version: int, group: ClassicGroup, member_id: str, *, with_members: bool,
                 leader: str | None = None, skip_assignment: bool = False) -> JoinGroupResponse:
    return join_response(
        version, member_id=member_id, generation_id=group.generation_id, protocol_type=group.protocol_type,
        protocol_name=group.protocol_name, leader=leader if leader is not None else (group.leader_id or ""),
        skip_assignment=skip_assignment, members=current_members(group) if with_members else (),
    )


def sync_response(version: int, error: ErrorCode = ErrorCode.NONE, *, protocol_type: str | None = None,
                  protocol_name: str | None = None, assignment: bytes = b"") -> SyncGroupResponse:
    if version < 5:
        protocol_type = protocol_name = None
    return SyncGroupResponse(error_code=error, protocol_type=protocol_type, protocol_name=protocol_name,
                             assignment=assignment)
