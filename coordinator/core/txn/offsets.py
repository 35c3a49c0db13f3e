"""TxnOffsetCommit's group checks (KIP-447).

OffsetMetadataManager.validateTransactionalOffsetCommit for classic groups: unlike OffsetCommit,
CompletingRebalance is no error, and a request without member fields (v0-2) is accepted for any
group. The pending offsets themselves are the transaction coordinator's (TxnCoordinator.commit_offsets).
"""

from __future__ import annotations

from coordinator.core.classic.guards import ensure_generation, ensure_member
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.shard_state import ShardState
from protocol.error_codes import ErrorCode


def validate_txn_offset_commit(st: ShardState, group_id: str, generation_id: int, member_id: str,
                               group_instance_id: str | None) -> None:
    """Raises ApiError(code) when the group refuses the commit."""
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    # Classic groups only, as before the one group map: the KIP-447 checks of a consumer-protocol group
    # (member epoch in place of the generation) are still to come.
    group = st.groups.classic(group_id)
    if group is None:
        if generation_id < 0:
            return  # a simple group, created by the commit
        raise ApiError(ErrorCode.ILLEGAL_GENERATION)
    if group.state is GroupState.DEAD:
        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return
    if generation_id >= 0 or member_id or group_instance_id is not None:
        ensure_member(group, member_id, group_instance_id)
        ensure_generation(group, generation_id)
