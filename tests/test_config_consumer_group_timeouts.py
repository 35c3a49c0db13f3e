"""The KIP-848 session timeout and heartbeat interval bounds, checked at load like Kafka's GroupCoordinatorConfig."""

from __future__ import annotations

import pytest

from coordinator.config import ConfigError, load_config

P = "group.consumer."


def test_defaults_are_kafkas_and_valid():
    config = load_config(environ={})
    assert [config[P + name] for name in ("session.timeout.ms", "min.session.timeout.ms", "max.session.timeout.ms",
                                          "heartbeat.interval.ms", "min.heartbeat.interval.ms",
                                          "max.heartbeat.interval.ms")] == [45000, 45000, 60000, 5000, 5000, 15000]


def test_lower_timeouts_are_accepted_once_their_minimums_are_lowered():
    config = load_config(environ={}, overrides=[
        P + "session.timeout.ms=6000", P + "min.session.timeout.ms=6000",
        P + "heartbeat.interval.ms=500", P + "min.heartbeat.interval.ms=500"])
    assert (config[P + "session.timeout.ms"], config[P + "heartbeat.interval.ms"]) == (6000, 500)


@pytest.mark.parametrize("overrides, message", [
    ([P + "session.timeout.ms=6000"],
     "group.consumer.session.timeout.ms (6000) must be greater than or equal to "
     "group.consumer.min.session.timeout.ms (45000)"),
    ([P + "session.timeout.ms=70000"],
     "group.consumer.session.timeout.ms (70000) must be less than or equal to "
     "group.consumer.max.session.timeout.ms (60000)"),
    ([P + "max.session.timeout.ms=40000"],
     "group.consumer.max.session.timeout.ms (40000) must be greater than or equal to "
     "group.consumer.min.session.timeout.ms (45000)"),
    ([P + "heartbeat.interval.ms=500"],
     "group.consumer.heartbeat.interval.ms (500) must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms (5000)"),
    ([P + "heartbeat.interval.ms=20000"],
     "group.consumer.heartbeat.interval.ms (20000) must be less than or equal to "
     "group.consumer.max.heartbeat.interval.ms (15000)"),
    ([P + "max.heartbeat.interval.ms=4000"],
     "group.consumer.max.heartbeat.interval.ms (4000) must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms (5000)"),
    ([P + "session.timeout.ms=6000", P + "min.session.timeout.ms=1000", P + "heartbeat.interval.ms=6000",
      P + "max.heartbeat.interval.ms=6000"],
     "group.consumer.heartbeat.interval.ms (6000) must be less than group.consumer.session.timeout.ms (6000)"),
])
def test_out_of_bounds_timeouts_stop_loading_with_kafkas_rule(overrides, message):
    with pytest.raises(ConfigError) as info:
        load_config(environ={}, overrides=overrides)
    assert str(info.value) == message


def test_bounds_come_from_the_environment_too():
    env = {"GROUPCOORD_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS": "1000",
           "GROUPCOORD_GROUP_CONSUMER_SESSION_TIMEOUT_MS": "6000"}
    assert load_config(environ=env)[P + "session.timeout.ms"] == 6000
    with pytest.raises(ConfigError, match=r"group\.consumer\.min\.session\.timeout\.ms: must be at least 1"):
        load_config(environ={"GROUPCOORD_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS": "0"})
