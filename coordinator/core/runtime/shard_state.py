"""Everything one coordinator shard knows: durable maps (changed only by replay) and live groups."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.core.classic.config import GroupConfig
from coordinator.core.runtime.groups import GroupMap
from coordinator.records import GroupReason, OffsetAndMetadata
from protocol.messages import GroupMetadataValue

TopicPartition = tuple[str, int]
GroupPartition = tuple[str, str, int]  # (group id, topic, partition)


@dataclass(slots=True)
class PendingOffset:
    """A transactional offset commit waiting for its transaction's marker (Kafka's pending
    transactional offsets). `seq` orders pending records as the log does; `superseded` is set when a
    commit written after it already decides the partition, so the marker's COMMIT must not apply it
    (Kafka compares record offsets: replayEndTransactionMarker)."""

    offset: OffsetAndMetadata
    seq: int
    superseded: bool = False


@dataclass(slots=True)
class ShardState:
    config: GroupConfig
    new_uuid: Callable[[], str]  # injected: the core never draws randomness itself
    # Live groups of every type, one namespace of ids. Membership and rebalance progress are soft
    # state changed by the handlers; a group comes into being or disappears only through replay (or
    # a handler that writes the records of the group it creates or converts in place).
    groups: GroupMap = field(default_factory=GroupMap)
    # Durable state: exactly what the replayed records say.
    persisted: dict[str, GroupMetadataValue] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    reasons: dict[str, GroupReason] = field(default_factory=dict)
    # Transactional offsets (TxnOffsetCommit) by producer id until their marker, and which producers
    # hold a pending offset of each partition (Kafka's pendingTransactionalOffsets / openTransactions).
    pending_offsets: dict[int, dict[GroupPartition, PendingOffset]] = field(default_factory=dict)
    open_transactions: dict[GroupPartition, set[int]] = field(default_factory=dict)
    pending_seq: int = 0
    loading: bool = False

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{self.new_uuid()}"
