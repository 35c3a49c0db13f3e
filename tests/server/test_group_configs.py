"""Per-group settings over the wire: IncrementalAlterConfigs and DescribeConfigs on GROUP resources,
their effect on ConsumerGroupHeartbeat, their durability across kill -9, and their ACLs."""

from __future__ import annotations

import os
import signal
import time

import pytest

from coordinator.cli import main as groupcoord
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

GROUP, BROKER = 32, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 4, 5, 8
INT = 3
Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
Alter = IncrementalAlterConfigsRequest.AlterableConfig
Describe = DescribeConfigsRequest.DescribeConfigsResource


def alter(wire, group: str, *ops: tuple[str, int, str | None], validate_only: bool = False,
          version: int = 1, resource_type: int = GROUP) -> tuple[int, str | None]:
    response = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, IncrementalAlterConfigsRequest(
        resources=[Resource(resource_type, group, [Alter(name, op, value) for name, op, value in ops])],
        validate_only=validate_only))
    [answer] = response.responses
    assert (answer.resource_type, answer.resource_name) == (resource_type, group)
    return answer.error_code, answer.error_message


def describe(wire, group: str, version: int = 4, synonyms: bool = False, keys: list[str] | None = None):  # type: ignore[no-untyped-def]
    response = wire.request(ApiKey.DESCRIBE_CONFIGS, version, DescribeConfigsRequest(
        resources=[Describe(GROUP, group, keys)], include_synonyms=synonyms))
    [result] = response.results
    return result


def values(result) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {c.name: c.value for c in result.configs}


def heartbeat_interval(wire, group: str) -> int:
    response = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="", member_epoch=0, rebalance_timeout_ms=30_000, subscribed_topic_names=["t"],
        topic_partitions=[]))
    assert response.error_code == ErrorCode.NONE, response.error_message
    return response.heartbeat_interval_ms


# ---- shared server: behaviour that needs no restart -----------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_alter_configs_is_advertised_and_sets_a_group_setting(wire, version):
    advertised = wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("server-tests", "1.0"))
    assert {k.api_key: (k.min_version, k.max_version) for k in advertised.api_keys}[44] == (0, 1)
    group = f"set-v{version}"
    assert alter(wire, group, ("consumer.session.timeout.ms", SET, "50000"), version=version) == (0, None)
    assert values(describe(wire, group))["consumer.session.timeout.ms"] == "50000"


def test_describe_reports_group_values_and_broker_defaults_with_kafkas_sources(wire):
    assert alter(wire, "described", ("consumer.heartbeat.interval.ms", SET, "6000")) == (0, None)
    result = describe(wire, "described", synonyms=True)
    assert result.error_code == ErrorCode.NONE
    by_name = {c.name: c for c in result.configs}
    assert sorted(by_name) == ["consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms",
                               "consumer.session.timeout.ms", "share.auto.offset.reset", "share.delivery.count.limit",
                               "share.heartbeat.interval.ms", "share.isolation.level",
                               "share.partition.max.record.locks", "share.record.lock.duration.ms",
                               "share.renew.acknowledge.enable", "share.session.timeout.ms"]
    heartbeat = by_name["consumer.heartbeat.interval.ms"]
    assert (heartbeat.value, heartbeat.config_source, heartbeat.read_only, heartbeat.config_type) == (
        "6000", DYNAMIC_GROUP_CONFIG, False, INT)
    assert [(s.name, s.value, s.source) for s in heartbeat.synonyms] == [
        ("consumer.heartbeat.interval.ms", "6000", DYNAMIC_GROUP_CONFIG),
        ("group.consumer.heartbeat.interval.ms", "5000", DEFAULT_CONFIG)]
    session = by_name["consumer.session.timeout.ms"]
    assert (session.value, session.config_source) == ("45000", DEFAULT_CONFIG)
    assert [(s.name, s.source) for s in session.synonyms] == [("group.consumer.session.timeout.ms", DEFAULT_CONFIG)]
    assert by_name["consumer.assignment.interval.ms"].value == "1000"
    # Without synonyms asked for, none are sent; v0 has no sources, only is_default.
    assert all(c.synonyms == [] for c in describe(wire, "described").configs)
    v0 = {c.name: c.is_default for c in describe(wire, "described", version=0).configs}
    assert {name for name, default in v0.items() if not default} == {"consumer.heartbeat.interval.ms"}
    keyed = describe(wire, "described", keys=["consumer.session.timeout.ms"])
    assert [c.name for c in keyed.configs] == ["consumer.session.timeout.ms"]


def test_delete_returns_a_setting_to_the_brokers_value_and_validate_only_changes_nothing(wire):
    assert alter(wire, "deleted", ("consumer.assignment.interval.ms", SET, "0")) == (0, None)
    assert alter(wire, "deleted", ("consumer.assignment.interval.ms", SET, "500"), validate_only=True) == (0, None)
    assert values(describe(wire, "deleted"))["consumer.assignment.interval.ms"] == "0"
    assert alter(wire, "deleted", ("consumer.assignment.interval.ms", DELETE, None)) == (0, None)
    entry = {c.name: c for c in describe(wire, "deleted").configs}["consumer.assignment.interval.ms"]
    assert (entry.value, entry.config_source) == ("1000", DEFAULT_CONFIG)
    assert alter(wire, "deleted", ("consumer.session.timeout.ms", DELETE, None)) == (0, None)  # not set: fine


@pytest.mark.parametrize("ops, expected", [
    ([("consumer.session.timeout.ms", SET, "1000")],
     (ErrorCode.INVALID_CONFIG, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")),
    ([("consumer.heartbeat.interval.ms", SET, "16000")],
     (ErrorCode.INVALID_CONFIG, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.")),
    ([("consumer.assignment.interval.ms", SET, "-1")],
     (ErrorCode.INVALID_CONFIG,
      "Invalid value -1 for configuration consumer.assignment.interval.ms: Value must be at least 0")),
    ([("consumer.assignment.interval.ms", SET, "20000")],
     (ErrorCode.INVALID_CONFIG, "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive.")),
    ([("consumer.session.timeout.ms", SET, "abc")],
     (ErrorCode.INVALID_CONFIG,
      "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT")),
    ([("streams.session.timeout.ms", SET, "45000")],  # no streams groups here
     (ErrorCode.INVALID_CONFIG, "Unknown group config name: streams.session.timeout.ms")),
    ([("share.session.timeout.ms", SET, "1000")],
     (ErrorCode.INVALID_CONFIG, "share.session.timeout.ms must be in the range 45000 to 60000 inclusive.")),
    ([("share.record.lock.duration.ms", SET, "70000")],
     (ErrorCode.INVALID_CONFIG, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.")),
    ([("share.delivery.count.limit", SET, "1")],
     (ErrorCode.INVALID_CONFIG,
      "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2")),
    ([("share.isolation.level", SET, "READ_COMMITTED")],
     (ErrorCode.INVALID_CONFIG, "Invalid value READ_COMMITTED for configuration share.isolation.level: "
                                "String must be one of: read_committed, read_uncommitted")),
    ([("consumer.session.timeout.ms", APPEND, "50000")],
     (ErrorCode.INVALID_CONFIG, "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.")),
    ([("consumer.session.timeout.ms", SUBTRACT, "50000")],
     (ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key consumer.session.timeout.ms because its type is not LIST.")),
    ([("consumer.session.timeout.ms", 9, "50000")], (ErrorCode.INVALID_REQUEST, "Unknown operations type 9")),
    ([("consumer.session.timeout.ms", SET, None)],
     (ErrorCode.INVALID_REQUEST, "Null value not supported for : consumer.session.timeout.ms")),
    ([("consumer.session.timeout.ms", SET, "50000"), ("consumer.session.timeout.ms", DELETE, None)],
     (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")),
])
def test_invalid_changes_are_refused_with_kafkas_errors_and_change_nothing(wire, ops, expected):
    assert alter(wire, "refused", *ops) == expected
    assert all(c.config_source == DEFAULT_CONFIG for c in describe(wire, "refused").configs)


def test_empty_group_names_and_other_resource_types_are_invalid_requests(wire):
    assert alter(wire, "", ("consumer.session.timeout.ms", SET, "50000")) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert describe(wire, "").error_code == ErrorCode.INVALID_REQUEST
    assert alter(wire, "0", ("log.retention.ms", SET, "1"), resource_type=BROKER) == (
        ErrorCode.INVALID_REQUEST, "Altering BROKER configs is not supported by this server.")
    assert alter(wire, "x", ("a", SET, "1"), resource_type=7) == (ErrorCode.INVALID_REQUEST, "Unknown resource type 7")


def test_a_resource_named_twice_is_refused_both_times(wire):
    resource = Resource(GROUP, "twice", [Alter("consumer.session.timeout.ms", SET, "50000")])
    response = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IncrementalAlterConfigsRequest(
        resources=[resource, resource], validate_only=False))
    assert [(r.error_code, r.error_message) for r in response.responses] == [
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2


def test_heartbeats_carry_the_groups_heartbeat_interval_from_the_next_one(wire):
    wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name="t", num_partitions=1, replication_factor=1, assignments=[], configs=[])], timeout_ms=5000))
    assert heartbeat_interval(wire, "hb") == 5000
    assert alter(wire, "hb", ("consumer.heartbeat.interval.ms", SET, "7000")) == (0, None)
    assert heartbeat_interval(wire, "hb") == 7000
    assert heartbeat_interval(wire, "hb-other") == 5000


# ---- own servers: durability, broker settings, ACLs -----------------------------------------


def test_an_acknowledged_change_survives_kill_9(server_factory, connect):
    server = server_factory("group.consumer.session.timeout.ms=50000")
    wire = connect(server)
    assert alter(wire, "durable", ("consumer.assignment.interval.ms", SET, "250"),
                 ("consumer.session.timeout.ms", SET, "55000")) == (0, None)
    wire.close()
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    server.stop()
    server.start()
    server.wait_ready()
    result = describe(connect(server), "durable", synonyms=True)
    by_name = {c.name: c for c in result.configs}
    assert by_name["consumer.assignment.interval.ms"].value == "250"
    session = by_name["consumer.session.timeout.ms"]
    assert (session.value, session.config_source) == ("55000", DYNAMIC_GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [
        ("consumer.session.timeout.ms", "55000", DYNAMIC_GROUP_CONFIG),
        ("group.consumer.session.timeout.ms", "50000", STATIC_BROKER_CONFIG),
        ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]


def test_group_configs_need_alter_configs_and_describe_configs_on_the_group(server_factory, connect):
    server = server_factory("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    wire = connect(server)
    assert alter(wire, "locked", ("consumer.session.timeout.ms", SET, "50000")) == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
    assert describe(wire, "locked").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--add", "--allow-principal", "User:ANONYMOUS",
                       "--operation", "AlterConfigs", "--operation", "DescribeConfigs", "--group", "locked"]) == 0
    deadline = time.monotonic() + 5
    while alter(wire, "locked", ("consumer.session.timeout.ms", SET, "50000"))[0] != ErrorCode.NONE:
        assert time.monotonic() < deadline, "the ACL change was not applied"
        time.sleep(0.1)
    assert values(describe(wire, "locked"))["consumer.session.timeout.ms"] == "50000"
    denied = alter(wire, "other", ("consumer.session.timeout.ms", SET, "50000"))
    assert denied[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED
