"""Group-level settings: Kafka's validation rules, the clamping of stored values, the durable store."""

from __future__ import annotations

import json

import pytest

from coordinator.config import load_config
from coordinator.core.consumer import GroupConfigOverrides
from coordinator.group_config_store import FILE_NAME, GroupConfigStore
from coordinator.group_configs import GroupConfigError, effective_overrides, validate_group_configs
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
