"""Per-group overrides of consumer group settings: Kafka's GROUP config resource (KIP-848, KIP-1263).

An admin sets `consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms` or
`consumer.assignment.interval.ms` for one group with IncrementalAlterConfigs. The shell keeps them
(durably, validated against the broker's bounds) and hands the core a read-only mapping
group id -> `GroupConfigOverrides` in `ShardState.group_configs`, the way it hands in
topics: the core reads it at the moment it needs a value and never changes it.

A change applies from the next time the value is read, as in Kafka: the session timeout when a
member's session timer is next (re)armed, the heartbeat interval in the next heartbeat response,
the assignment interval at the next decision whether to run the assignor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coordinator.core.runtime.shard_state import ShardState


@dataclass(frozen=True, slots=True)
class GroupConfigOverrides:
    """The settings one group overrides; None: the broker's value applies."""

    session_timeout_ms: int | None = None  # consumer.session.timeout.ms
    heartbeat_interval_ms: int | None = None  # consumer.heartbeat.interval.ms
    assignment_interval_ms: int | None = None  # consumer.assignment.interval.ms
    # share groups (KIP-932): read by the share group core and the broker's share-partitions
    share_session_timeout_ms: int | None = None  # share.session.timeout.ms
    share_heartbeat_interval_ms: int | None = None  # share.heartbeat.interval.ms
    share_record_lock_duration_ms: int | None = None  # share.record.lock.duration.ms
    share_delivery_count_limit: int | None = None  # share.delivery.count.limit
    share_partition_max_record_locks: int | None = None  # share.partition.max.record.locks
    share_auto_offset_reset: str | None = None  # share.auto.offset.reset, as set
    share_isolation_level: str | None = None  # share.isolation.level
    share_renew_acknowledge_enable: bool | None = None  # share.renew.acknowledge.enable


#: What the shell hands in: group id -> that group's overrides (groups without any are absent).
GroupConfigsView = Mapping[str, GroupConfigOverrides]

NO_OVERRIDES = GroupConfigOverrides()


def _overrides(state: ShardState, group_id: str) -> GroupConfigOverrides:
    return state.group_configs.get(group_id, NO_OVERRIDES)


def session_timeout_ms(state: ShardState, group_id: str) -> int:
    value = _overrides(state, group_id).session_timeout_ms
    return state.consumer_config.session_timeout_ms if value is None else value


def heartbeat_interval_ms(state: ShardState, group_id: str) -> int:
    value = _overrides(state, group_id).heartbeat_interval_ms
    return state.consumer_config.heartbeat_interval_ms if value is None else value


def assignment_interval_ms(state: ShardState, group_id: str) -> int:
    value = _overrides(state, group_id).assignment_interval_ms
    return state.consumer_config.assignment_interval_ms if value is None else value
