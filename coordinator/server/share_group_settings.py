"""The share-partition settings in force for one share group: its GROUP config overrides over the
broker's `group.share.*` defaults (Kafka's GroupConfigManager + ShareGroupConfigProvider).

Read at the moment a value is used, as Kafka does: the lock duration when records are acquired
(and in the AcquisitionLockTimeoutMs of the answer), the delivery count limit when a record is
released, the in-flight limit when the window grows, `share.auto.offset.reset` when a
share-partition is initialized, `share.isolation.level` on every acquisition.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.config import Config
from coordinator.core.consumer.group_configs import GroupConfigOverrides
from coordinator.core.share.partition import PartitionLimits
from coordinator.group_configs import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    SHARE_AUTO_OFFSET_RESET_DEFAULT,
    ShareReset,
    parse_share_reset,
)


class ShareGroupSettings:
    """Per-group PartitionLimits, reset strategy and isolation level over a live overrides view."""

    __slots__ = ("_broker_limits", "_cache", "overrides")

    def __init__(self, broker: Config, overrides: Mapping[str, GroupConfigOverrides]) -> None:
        self.overrides = overrides
        self._broker_limits = PartitionLimits(lock_duration_ms=broker["group.share.record.lock.duration.ms"],
                                              delivery_count_limit=broker["group.share.delivery.count.limit"],
                                              max_in_flight=broker["group.share.partition.max.record.locks"])
        self._cache: dict[str, tuple[GroupConfigOverrides, PartitionLimits]] = {}

    @property
    def broker_limits(self) -> PartitionLimits:
        return self._broker_limits

    def limits(self, group_id: str) -> PartitionLimits:
        """The group's lock duration, delivery count limit and in-flight limit. Cached while the view
        hands out the same overrides object (it makes a new one when the store changes)."""
        overrides = self.overrides.get(group_id)
        if overrides is None:
            return self._broker_limits
        cached = self._cache.get(group_id)
        if cached is not None and cached[0] is overrides:
            return cached[1]
        base = self._broker_limits
        limits = PartitionLimits(
            lock_duration_ms=_or(overrides.share_record_lock_duration_ms, base.lock_duration_ms),
            delivery_count_limit=_or(overrides.share_delivery_count_limit, base.delivery_count_limit),
            max_in_flight=_or(overrides.share_partition_max_record_locks, base.max_in_flight),
            renew_enabled=overrides.share_renew_acknowledge_enable is not False)
        self._cache[group_id] = (overrides, limits)
        return limits

    def auto_offset_reset(self, group_id: str) -> ShareReset:
        overrides = self.overrides.get(group_id)
        raw = overrides.share_auto_offset_reset if overrides is not None else None
        return parse_share_reset(raw if raw is not None else SHARE_AUTO_OFFSET_RESET_DEFAULT)

    def read_committed(self, group_id: str) -> bool:
        overrides = self.overrides.get(group_id)
        level = overrides.share_isolation_level if overrides is not None else None
        return (level or READ_UNCOMMITTED) == READ_COMMITTED


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
