"""Group-level settings: Kafka's validation rules, the clamping of stored values, the durable store."""

from __future__ import annotations

import json

import pytest

from coordinator.config import load_config
from coordinator.core.consumer import GroupConfigOverrides
from coordinator.group_config_store import FILE_NAME, GroupConfigStore
from coordinator.group_configs import (
    GroupConfigError,
    ShareReset,
    effective_overrides,
    parse_iso_duration_ms,
    parse_share_reset,
    validate_group_configs,
)
from coordinator.server.group_configs_view import StoreGroupConfigs

# Bounds wide enough that a session timeout below the heartbeat interval is otherwise allowed.
WIDE = load_config(environ={}, overrides=[
    "group.consumer.min.session.timeout.ms=1000", "group.consumer.max.session.timeout.ms=60000",
    "group.consumer.session.timeout.ms=10000", "group.consumer.min.heartbeat.interval.ms=1000",
    "group.consumer.heartbeat.interval.ms=3000"])
DEFAULTS = load_config(environ={})


def test_valid_settings_are_parsed() -> None:
    assert validate_group_configs({"consumer.session.timeout.ms": " 50000 ", "consumer.assignment.interval.ms": "0"},
                                  DEFAULTS) == {"consumer.session.timeout.ms": 50000,
                                                "consumer.assignment.interval.ms": 0}


@pytest.mark.parametrize("configs, message", [
    ({"consumer.session.timeout.ms": "2000", "consumer.heartbeat.interval.ms": "2000"},
     "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
    ({"consumer.heartbeat.interval.ms": "10000"},  # against the broker's 10 s session timeout
     "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
    ({"consumer.session.timeout.ms": "2000"},  # against the broker's 3 s heartbeat interval
     "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
    ({"consumer.session.timeout.ms": "1_000"},
     "Invalid value 1_000 for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"consumer.session.timeout.ms": "99999999999"},
     "Invalid value 99999999999 for configuration consumer.session.timeout.ms: Not a number of type INT"),
    ({"consumer.session.timeout.ms": "0"},
     "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"),
    # Range checks come in Kafka's order: heartbeat, session, assignment interval.
    ({"consumer.session.timeout.ms": "70000", "consumer.heartbeat.interval.ms": "20000"},
     "consumer.heartbeat.interval.ms must be in the range 1000 to 15000 inclusive."),
])
def test_kafkas_rules_and_messages(configs: dict[str, str], message: str) -> None:
    with pytest.raises(GroupConfigError) as refused:
        validate_group_configs(configs, WIDE)
    assert str(refused.value) == message


def test_stored_values_outside_narrowed_bounds_are_clamped_when_used() -> None:
    stored = {"consumer.session.timeout.ms": "1000", "consumer.assignment.interval.ms": "20000"}
    assert effective_overrides("g", stored, DEFAULTS) == GroupConfigOverrides(
        session_timeout_ms=45000, heartbeat_interval_ms=None, assignment_interval_ms=15000)


def test_the_store_survives_a_restart_and_drops_groups_left_without_settings(tmp_path) -> None:
    store = GroupConfigStore(tmp_path)
    store.replace("g", {"consumer.session.timeout.ms": "50000"})
    store.replace("h", {"consumer.heartbeat.interval.ms": "6000"})
    store.replace("h", {})
    assert json.loads((tmp_path / FILE_NAME).read_text()) == {
        "version": 1, "groups": {"g": {"consumer.session.timeout.ms": "50000"}}}
    assert not (tmp_path / "group_configs.tmp").exists()
    reloaded = GroupConfigStore(tmp_path)
    assert dict(reloaded.get("g")) == {"consumer.session.timeout.ms": "50000"}
    assert list(reloaded) == ["g"]


def test_a_failed_write_changes_nothing(tmp_path) -> None:
    store = GroupConfigStore(tmp_path)
    store.replace("g", {"consumer.session.timeout.ms": "50000"})
    (tmp_path / "group_configs.tmp").mkdir()  # the temporary file cannot be created
    with pytest.raises(OSError):
        store.replace("g", {"consumer.session.timeout.ms": "55000"})
    assert dict(store.get("g")) == {"consumer.session.timeout.ms": "50000"}
    assert store.version == 1


def test_the_cores_view_follows_the_store() -> None:
    store = GroupConfigStore()
    view = StoreGroupConfigs(store, DEFAULTS)
    assert view.get("g") is None
    store.replace("g", {"consumer.heartbeat.interval.ms": "6000"})
    assert view["g"] == GroupConfigOverrides(heartbeat_interval_ms=6000)
    store.replace("g", {})
    assert "g" not in view


# ---- share groups (Kafka 4.4's GroupConfig share.* settings)

@pytest.mark.parametrize("configs, message", [
    ({"share.heartbeat.interval.ms": "4000"},
     "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
    ({"share.session.timeout.ms": "61000"}, "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    ({"share.record.lock.duration.ms": "999"},
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ({"share.record.lock.duration.ms": "14999"},
     "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    ({"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    ({"share.partition.max.record.locks": "99"},
     "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"),
    # validateValues' order: the share heartbeat before the share session timeout
    ({"share.session.timeout.ms": "1", "share.heartbeat.interval.ms": "1"},
     "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
    ({"share.isolation.level": "Read_Committed"}, "Invalid value Read_Committed for configuration "
     "share.isolation.level: String must be one of: read_committed, read_uncommitted"),
    ({"share.renew.acknowledge.enable": "yes"},
     "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false"),
    ({"share.auto.offset.reset": "by_duration:-PT1S"},
     "Invalid value by_duration:-PT1S for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1S` "
     "for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
     "'by_duration:<PnDTnHnMn.nS>'."),
    ({"streams.session.timeout.ms": "45000"}, "Unknown group config name: streams.session.timeout.ms"),
])
def test_share_settings_follow_kafkas_rules(configs: dict[str, str], message: str) -> None:
    with pytest.raises(GroupConfigError) as refused:
        validate_group_configs(configs, DEFAULTS)
    assert str(refused.value) == message


def test_share_session_timeout_must_exceed_the_heartbeat_interval() -> None:
    wide = load_config(environ={}, overrides=["group.share.min.session.timeout.ms=1000",
                                              "group.share.max.heartbeat.interval.ms=20000"])
    with pytest.raises(GroupConfigError) as refused:
        validate_group_configs({"share.heartbeat.interval.ms": "10000", "share.session.timeout.ms": "10000"}, wide)
    assert str(refused.value) == "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"


@pytest.mark.parametrize("text, expected_ms", [
    ("PT1H", 3_600_000), ("PT1H30M", 5_400_000), ("P1D", 86_400_000), ("PT0.5S", 500), ("pt15m", 900_000),
    ("P2DT3H4M5.006S", 2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5_006), ("-PT1S", -1000), ("PT0S", 0),
])
def test_iso_durations_parse_as_java_time_duration_does(text: str, expected_ms: int) -> None:
    assert parse_iso_duration_ms(text) == expected_ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1h", "PT1X", "P1H", "PT1.S1"])
def test_malformed_iso_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iso_duration_ms(text)


def test_reset_strategies() -> None:
    assert parse_share_reset(" earliest ") == ShareReset("earliest")
    assert parse_share_reset("by_duration:PT2M") == ShareReset("by_duration", 120_000)
    for bad in ("LATEST", "none", "by_duration:", "BY_DURATION:PT1H", "by_duration:PT-1H"):
        with pytest.raises(ValueError):
            parse_share_reset(bad)


def test_effective_share_overrides_are_clamped_and_parsed() -> None:
    stored = {"share.record.lock.duration.ms": "70000", "share.delivery.count.limit": "3",
              "share.isolation.level": "read_committed", "share.renew.acknowledge.enable": "FALSE",
              "share.auto.offset.reset": "earliest"}
    got = effective_overrides("g", stored, DEFAULTS)
    assert (got.share_record_lock_duration_ms, got.share_delivery_count_limit, got.share_isolation_level,
            got.share_renew_acknowledge_enable, got.share_auto_offset_reset) == (
        60_000, 3, "read_committed", False, "earliest")
