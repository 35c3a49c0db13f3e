"""Everything the consumer group core of one shard knows."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

from coordinator.core.assignors import ASSIGNORS, PartitionAssignor
from coordinator.core.consumer_group.config import ConsumerGroupConfig
from coordinator.core.consumer_group.member_ids import RandomBytes
from coordinator.core.consumer_group.model import ConsumerGroup
from coordinator.core.model import ClassicGroup


@dataclass(slots=True)
class ConsumerGroupsState:
    config: ConsumerGroupConfig
    random_bytes: RandomBytes  # injected: the core draws no randomness itself
    # Durable: exactly what the replayed ConsumerGroup* records say.
    groups: dict[str, ConsumerGroup] = field(default_factory=dict)
    # The classic groups of the same shard (GroupShard.state.groups). Group ids are one namespace:
    # a heartbeat may replace an empty classic group (spec 4.1), and replaying a consumer group
    # record drops a simple classic group of the same id (spec 11).
    classic_groups: MutableMapping[str, ClassicGroup] = field(default_factory=dict)
    # Name -> assignor; tests swap in failing ones. Only names in config.assignors are used.
    assignors: Mapping[str, PartitionAssignor] = field(default_factory=lambda: dict(ASSIGNORS))
    loading: bool = False
