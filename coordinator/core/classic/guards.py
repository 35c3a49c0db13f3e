"""Checks shared by the classic APIs; each raises ApiError with Kafka's code."""

from __future__ import annotations

from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.runtime.errors import ApiError
from protocol.error_codes import ErrorCode


def ensure_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> Member:
    """Kafka's validateMember: a given instance id must map to this member id, then the id must exist."""
    if group_instance_id is not None:
        mapped = group.static_members.get(group_instance_id)
        if mapped is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown group instance id {group_instance_id}")
        if mapped != member_id:
            raise ApiError(ErrorCode.FENCED_INSTANCE_ID, f"{group_instance_id} is now {mapped}")
    member = group.members.get(member_id)
    if member is None:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown member id {member_id}")
    return member


def ensure_generation(group: ClassicGroup, generation_id: int) -> None:
    if generation_id != group.generation_id:
        raise ApiError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation_id} != {group.generation_id}")
