"""The share group settings' bounds, checked at load as Kafka 4.4's GroupCoordinatorConfig and
ShareGroupConfig check them (same order, so the first error is the one Kafka reports)."""

from __future__ import annotations

import pytest

from coordinator.config import ConfigError, load_config

P = "group.share."


def test_defaults_are_kafkas_and_valid():
    config = load_config(environ={})
    assert [config[P + name] for name in (
        "record.lock.duration.ms", "min.record.lock.duration.ms", "max.record.lock.duration.ms",
        "delivery.count.limit", "min.delivery.count.limit", "max.delivery.count.limit",
        "partition.max.record.locks", "min.partition.max.record.locks", "max.partition.max.record.locks",
    )] == [30000, 15000, 60000, 5, 2, 10, 2000, 100, 4000]


def test_a_short_lock_is_accepted_once_its_minimum_is_lowered():
    config = load_config(environ={}, overrides=[P + "record.lock.duration.ms=1000",
                                                 P + "min.record.lock.duration.ms=1000"])
    assert config[P + "record.lock.duration.ms"] == 1000


@pytest.mark.parametrize("overrides, message", [
    ([P + "heartbeat.interval.ms=1000"],
     "group.share.heartbeat.interval.ms (1000) must be greater than or equal to "
     "group.share.min.heartbeat.interval.ms (5000)"),
    ([P + "session.timeout.ms=10000"],
     "group.share.session.timeout.ms (10000) must be greater than or equal to "
     "group.share.min.session.timeout.ms (45000)"),
    ([P + "session.timeout.ms=6000", P + "min.session.timeout.ms=1000", P + "heartbeat.interval.ms=6000",
      P + "max.heartbeat.interval.ms=6000"],
     "group.share.heartbeat.interval.ms (6000) must be less than group.share.session.timeout.ms (6000)"),
    ([P + "max.delivery.count.limit=5", P + "delivery.count.limit=6"],
     "group.share.max.delivery.count.limit (5) must be greater than or equal to group.share.delivery.count.limit (6)"),
    ([P + "partition.max.record.locks=5000"],
     "group.share.max.partition.max.record.locks (4000) must be greater than or equal to "
     "group.share.partition.max.record.locks (5000)"),
    ([P + "record.lock.duration.ms=5000"],
     "group.share.record.lock.duration.ms (5000) must be greater than or equal to "
     "group.share.min.record.lock.duration.ms (15000)"),
    ([P + "record.lock.duration.ms=70000"],
     "group.share.max.record.lock.duration.ms (60000) must be greater than or equal to "
     "group.share.record.lock.duration.ms (70000)"),
    ([P + "max.share.sessions=100"],
     "group.share.max.share.sessions (100) must be greater than or equal to group.share.max.size (200)"),
])
def test_out_of_bounds_settings_stop_loading_with_kafkas_rule(overrides, message):
    with pytest.raises(ConfigError) as info:
        load_config(environ={}, overrides=overrides)
    assert str(info.value) == message
