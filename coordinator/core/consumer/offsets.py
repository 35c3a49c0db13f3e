"""docs/spec/offsets.md#consumer-groups: who may commit and fetch offsets of a consumer group (OffsetCommit v9,
OffsetFetch v9).

Only the checks live here; storing and reading offsets stays with `coordinator.core.offsets`.
Both functions return None when the id is not a consumer group, so the caller goes on with the
classic path (which handles unknown groups and creates simple groups for admin commits).
"""

from __future__ import annotations

from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.leave import ensure_member
from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember
from coordinator.core.runtime.shard_state import ShardState
from protocol.error_codes import ErrorCode

#: The first OffsetCommit version that carries a member epoch (KIP-848).
OFFSET_COMMIT_MEMBER_EPOCH_VERSION = 9


def ensure_offset_commit_allowed(state: ShardState, group_id: str, member_id: str, member_epoch: int,
                                 api_version: int, *, transactional: bool = False) -> ConsumerGroup | None:
    """Kafka's ConsumerGroup.validateOffsetCommit. Raises UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION or
    STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for transactional commits and classic-protocol members)."""
    group = state.groups.consumer(group_id)
    if group is None:
        return None
    if member_epoch < 0 and not group.members:
        return group  # admin tools and consumers without group management, while nobody is in the group
    member = ensure_member(group, member_id)
    # Classic-protocol members (docs/spec/consumer-protocol.md#classic-members) commit with their generation (= member
    # epoch) on any version.
    if not transactional and not member.uses_classic_protocol and api_version < OFFSET_COMMIT_MEMBER_EPOCH_VERSION:
        raise ConsumerGroupError(ErrorCode.UNSUPPORTED_VERSION,
                                 "OffsetCommit version 9 or above must be used by members using the "
                                 "modern group protocol")
    _ensure_member_epoch(member, member_epoch, transactional)
    return group


def ensure_offset_fetch_allowed(state: ShardState, group_id: str, member_id: str | None,
                                member_epoch: int) -> ConsumerGroup | None:
    """Kafka's ConsumerGroup.validateOffsetFetch: no member id and a negative epoch is an admin fetch."""
    group = state.groups.consumer(group_id)
    if group is None:
        return None
    if member_id is None and member_epoch < 0:
        return group
    _ensure_member_epoch(ensure_member(group, member_id or ""), member_epoch, transactional=False)
    return group


def _ensure_member_epoch(member: ConsumerMember, received: int, transactional: bool) -> None:
    if received != member.member_epoch:
        # Transactional producers and classic-protocol members only know ILLEGAL_GENERATION.
        classic = transactional or member.uses_classic_protocol
        code = ErrorCode.ILLEGAL_GENERATION if classic else ErrorCode.STALE_MEMBER_EPOCH
        raise ConsumerGroupError(code, f"The received member epoch {received} does not match the expected "
                                       f"member epoch {member.member_epoch}.")
