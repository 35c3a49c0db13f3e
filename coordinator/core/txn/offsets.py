"""TxnOffsetCommit's group checks (KIP-447) and the pending transactional offsets of a group coordinator.

`validate_txn_offset_commit` is OffsetMetadataManager.validateTransactionalOffsetCommit for classic
groups: unlike OffsetCommit, CompletingRebalance is no error, and a request without member fields
(v0-2) is accepted for any group. `PendingTxnOffsets` holds what a transaction committed until its
marker: invisible to OffsetFetch, reported UNSTABLE_OFFSET_COMMIT with RequireStable, materialized
as ordinary offset commit records by a COMMIT marker and dropped by an ABORT
(OffsetMetadataManager.replayEndTransactionMarker).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.core.errors import ApiError
from coordinator.core.guards import ensure_generation, ensure_member
from coordinator.core.shard_state import ShardState
from coordinator.core.state import GroupState
from protocol.error_codes import ErrorCode


def validate_txn_offset_commit(st: ShardState, group_id: str, generation_id: int, member_id: str,
                               group_instance_id: str | None) -> None:
    """Raises ApiError(code) when the group refuses the commit."""
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    group = st.groups.get(group_id)
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


@dataclass(frozen=True, slots=True)
class PendingOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(slots=True)
class PendingTxnOffsets:
    """producer id -> group -> (topic, partition) -> the offset its open transaction committed."""

    by_producer: dict[int, dict[str, dict[tuple[str, int], PendingOffset]]] = field(default_factory=dict)

    def add(self, producer_id: int, group_id: str, offsets: dict[tuple[str, int], PendingOffset]) -> None:
        self.by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return any((topic, partition) in groups.get(group_id, {}) for groups in self.by_producer.values())

    def groups_of(self, producer_id: int) -> dict[str, dict[tuple[str, int], PendingOffset]]:
        return self.by_producer.get(producer_id, {})

    def end(self, producer_id: int) -> dict[str, dict[tuple[str, int], PendingOffset]]:
        """The marker: what the producer's transaction held, removed."""
        return self.by_producer.pop(producer_id, {})
