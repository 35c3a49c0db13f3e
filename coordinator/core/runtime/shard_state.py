"""Everything one coordinator shard knows, for every group type: one state object (Kafka's
GroupMetadataManager holds every group type, their offsets and their settings behind one map).

Durable maps are changed only by replay; live groups also carry soft state the handlers change.
The consumer-group fields (assignor runs, parked heartbeats, caches) sit beside the classic ones
here rather than in a second object, so nothing is aliased between two states. Their types are
named for the type checker only: the consumer package imports this module, not the other way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.core.assignors import ASSIGNORS, PartitionAssignor
from coordinator.core.classic.config import GroupConfig
from coordinator.core.runtime.groups import GroupMap
from coordinator.records import GroupReason, OffsetAndMetadata
from protocol.messages import GroupMetadataValue

if TYPE_CHECKING:
    from coordinator.core.consumer.config import ConsumerGroupConfig
    from coordinator.core.consumer.group_configs import GroupConfigOverrides
    from coordinator.core.consumer.member_ids import RandomBytes
    from coordinator.core.consumer.state import AssignmentRun, Waiter

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
    config: GroupConfig  # the classic protocol's settings, and the shard's (offset retention)
    consumer_config: ConsumerGroupConfig  # the consumer protocol's (KIP-848) settings
    # Injected sources: the core never draws randomness itself.
    new_uuid: Callable[[], str]  # classic member ids
    random_bytes: RandomBytes  # consumer member ids
    # Live groups of every type, one namespace of ids. Membership and rebalance progress are soft
    # state changed by the handlers; a group comes into being or disappears only through replay (or
    # a handler that writes the records of the group it creates or converts in place). Group ids
    # are one namespace: a heartbeat may replace an empty classic group
    # (docs/spec/consumer-protocol.md#joining), and replaying a consumer group record replaces a
    # simple classic group of the same id (docs/spec/consumer-protocol.md#records).
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
    # Per-group overrides (Kafka's GROUP config resource): a read-only view the shell keeps up to
    # date, group id -> overrides; see consumer/group_configs.py. Not state of ours: never written here.
    group_configs: Mapping[str, GroupConfigOverrides] = field(default_factory=dict)

    # ---- consumer groups' soft state (lost on unload) -------------------------------------------
    # Name -> assignor; tests swap in failing ones. Only names in consumer_config.assignors are used.
    assignors: Mapping[str, PartitionAssignor] = field(default_factory=lambda: dict(ASSIGNORS))
    # KIP-1263 assignor runs (see consumer/batching.py): the run in flight per group id, and the
    # heartbeats parked until it lands. A run that never lands expires.
    runs: dict[str, AssignmentRun] = field(default_factory=dict)
    waiters: dict[str, list[Waiter]] = field(default_factory=dict)
    next_job_id: int = 1
    # Caches that keep building a job cheap (soft: they only save work). Subscription tuples are
    # interned on replay, so members sharing a subscription share the tuple and a job resolves each
    # one once by identity; a member's encoded target is reused while its target object and the
    # topic table are the same objects.
    subscriptions: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    topic_table: tuple[Any, ...] | None = None  # (metadata object, topic ids text, index by id, index by name)
    encoded_targets: dict[tuple[str, str], tuple[Any, Any, bytes]] = field(default_factory=dict)
    # Mixed groups (docs/spec/consumer-protocol.md#migration), soft state: when each classic member's
    # join timer is due, so a heartbeat can arm it only if absent (Kafka's scheduleIfAbsent) without
    # pushing it back.
    classic_join_deadlines: dict[tuple[str, str], int] = field(default_factory=dict)
    # Soft state, from the shell's topic events (Kafka's lastMetadataImageWithNewTopics): the TopicsView
    # version at which topics were last created; groups resolved against an older one refresh their
    # regular expressions (docs/spec/consumer-protocol.md#regular-expressions).
    topics_created_version: int = 0

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{self.new_uuid()}"

    def empty_copy(self) -> ShardState:
        """A state with the same settings and sources and no groups: a scratch replay target."""
        return ShardState(self.config, self.consumer_config, self.new_uuid, self.random_bytes,
                          group_configs=self.group_configs, assignors=self.assignors)
