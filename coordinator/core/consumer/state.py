"""Everything the consumer group core of one shard knows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.core.assignors import ASSIGNORS, PartitionAssignor
from coordinator.core.classic.config import GroupConfig
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.group_configs import GroupConfigOverrides
from coordinator.core.consumer.member_ids import RandomBytes
from coordinator.core.consumer.model import Assignment, ConsumerMember
from coordinator.core.consumer.topics import TopicInfo
from coordinator.core.runtime.context import RequestRef
from coordinator.core.runtime.groups import GroupMap


@dataclass(slots=True)
class AssignmentRun:
    """An assignor run in flight: which job, for which group epoch, and what it saw of the group."""

    job_id: int
    epoch: int
    started_ms: int
    # member id -> subscribed topic names as the job saw them (the same tuple objects), and the
    # subscription metadata object: a change since then is a missed change to apply on landing.
    subscriptions: dict[str, tuple[str, ...]]
    metadata: Mapping[str, TopicInfo]
    instance_ids: dict[str, str]  # instance id -> member id, as the job saw them
    topic_ids: tuple[str, ...]  # the job's topic table, to decode its result


@dataclass(slots=True)
class Waiter:
    """A heartbeat parked until its group's run lands (or `assignment_wait_ms` passes)."""

    ref: RequestRef
    member_id: str
    member: ConsumerMember  # the member as the provisional answer left it
    before_assigned: Assignment  # what the client was known to own before the request
    owned: Assignment | None  # what the request reported owning
    full: bool
    provisional: Any  # the answer it gets if the run does not land in time


@dataclass(slots=True)
class ConsumerGroupsState:
    config: ConsumerGroupConfig
    random_bytes: RandomBytes  # injected: the core draws no randomness itself
    # The shard's one map of groups (GroupShard.state.groups); consumer groups in it are exactly
    # what the replayed ConsumerGroup* records say. Group ids are one namespace: a heartbeat may
    # replace an empty classic group (docs/spec/consumer-protocol.md#joining), and replaying a consumer
    # group record replaces a simple classic group of the same id (docs/spec/consumer-protocol.md#records).
    groups: GroupMap = field(default_factory=GroupMap)
    # Name -> assignor; tests swap in failing ones. Only names in config.assignors are used.
    assignors: Mapping[str, PartitionAssignor] = field(default_factory=lambda: dict(ASSIGNORS))
    loading: bool = False
    # Soft state of KIP-1263 assignor runs (see batching.py): the run in flight per group id, and the
    # heartbeats parked until it lands. Lost on unload; a run that never lands expires.
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
    # Mixed groups (docs/spec/consumer-protocol.md#migration): the classic settings a downgrade needs (group.max.size,
    # rebalance delays), and soft state: when each classic member's join timer is due, so a heartbeat can
    # arm it only if absent (Kafka's scheduleIfAbsent) without pushing it back.
    classic_config: GroupConfig = field(default_factory=GroupConfig)
    classic_join_deadlines: dict[tuple[str, str], int] = field(default_factory=dict)
    # Per-group overrides (Kafka's GROUP config resource): a read-only view the shell keeps up to
    # date, group id -> overrides; see group_configs.py. Not state of ours: never written here.
    group_configs: Mapping[str, GroupConfigOverrides] = field(default_factory=dict)
    # Soft state, from the shell's topic events (Kafka's lastMetadataImageWithNewTopics): the TopicsView
    # version at which topics were last created; groups resolved against an older one refresh their
    # regular expressions (docs/spec/consumer-protocol.md#regular-expressions).
    topics_created_version: int = 0
