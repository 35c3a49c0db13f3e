"""Topic settings over the wire: IncrementalAlterConfigs and AlterConfigs on TOPIC resources,
persisted, applied live and shown by DescribeConfigs with their source; bad input gets Kafka's
errors and changes nothing."""

from __future__ import annotations

import time
import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

from .admin_wire import EARLIEST, create_topic, list_offset, produce

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
Op = IncrementalAlterConfigsRequest.AlterableConfig


def unique(stem: str = "tc") -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def incremental(wire, topic: str, *ops: tuple[str, int, str | None], validate_only: bool = False,
                version: int = 1) -> tuple[int, str | None]:
    response = wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, IncrementalAlterConfigsRequest(
        resources=[IncrementalAlterConfigsRequest.AlterConfigsResource(TOPIC, topic, [Op(n, o, v) for n, o, v in ops])],
        validate_only=validate_only))
    [result] = response.responses
    assert (result.resource_type, result.resource_name) == (TOPIC, topic)
    return result.error_code, result.error_message


def legacy(wire, topic: str, configs: dict[str, str | None], validate_only: bool = False, version: int = 2,
           resource_type: int = TOPIC) -> tuple[int, str | None]:
    entries = [AlterConfigsRequest.AlterableConfig(n, v) for n, v in configs.items()]
    response = wire.request(ApiKey.ALTER_CONFIGS, version, AlterConfigsRequest(
        resources=[AlterConfigsRequest.AlterConfigsResource(resource_type, topic, entries)],
        validate_only=validate_only))
    [result] = response.responses
    return result.error_code, result.error_message


def described(wire, topic: str, synonyms: bool = False) -> dict:
    response = wire.request(ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(
        resources=[DescribeConfigsRequest.DescribeConfigsResource(TOPIC, topic, None)], include_synonyms=synonyms))
    [result] = response.results
    assert result.error_code == 0
    return {c.name: c for c in result.configs}


def test_incremental_set_delete_append_and_subtract_show_up_in_describe_configs(wire):
    topic = unique()
    create_topic(wire, topic)
    assert incremental(wire, topic, ("retention.ms", SET, "3600000"), ("segment.bytes", SET, "1048576")) == (0, None)
    configs = described(wire, topic, synonyms=True)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("3600000", DYNAMIC_TOPIC_CONFIG)
    assert next((s.name, s.value, s.source) for s in configs["retention.ms"].synonyms) == (
        "retention.ms", "3600000", DYNAMIC_TOPIC_CONFIG)
    assert configs["retention.bytes"].config_source == DEFAULT_CONFIG
    assert incremental(wire, topic, ("cleanup.policy", APPEND, "compact")) == (0, None)
    assert described(wire, topic)["cleanup.policy"].value == "delete,compact"
    assert incremental(wire, topic, ("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None)) == (0, None)
    configs = described(wire, topic)
    assert configs["cleanup.policy"].value == "compact"
    assert incremental(wire, topic, ("cleanup.policy", SUBTRACT, "compact")) == (0, None)  # Kafka 4: may be empty
    assert described(wire, topic)["cleanup.policy"].value == ""
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("604800000", DEFAULT_CONFIG)


def test_legacy_alter_configs_replaces_the_whole_set(wire):
    topic = unique()
    create_topic(wire, topic, configs={"retention.ms": "1000", "segment.ms": "60000"})
    for version in (0, 1, 2):
        assert legacy(wire, topic, {"retention.bytes": f"{version + 1}000000"}, version=version) == (0, None)
    configs = described(wire, topic)
    assert (configs["retention.bytes"].value, configs["retention.bytes"].config_source) == (
        "3000000", DYNAMIC_TOPIC_CONFIG)
    assert configs["retention.ms"].config_source == configs["segment.ms"].config_source == DEFAULT_CONFIG
    assert legacy(wire, topic, {"cleanup.policy": "compact", "min.compaction.lag.ms": "60000"}) == (0, None)
    configs = described(wire, topic, synonyms=True)
    lag = configs["min.compaction.lag.ms"]
    assert (lag.value, lag.config_source, [(s.name, s.source) for s in lag.synonyms]) == (
        "60000", DYNAMIC_TOPIC_CONFIG,
        [("min.compaction.lag.ms", DYNAMIC_TOPIC_CONFIG), ("log.cleaner.min.compaction.lag.ms", DEFAULT_CONFIG)])


@pytest.mark.parametrize("ops, code, message", [
    ([("retention.ms", SET, "soon")], ErrorCode.INVALID_CONFIG,
     "Invalid value soon for configuration retention.ms: Not a number of type LONG"),
    ([("retention.ms", SET, "-2")], ErrorCode.INVALID_CONFIG,
     "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ([("segment.bytes", SET, "1048575")], ErrorCode.INVALID_CONFIG,
     "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"),
    ([("cleanup.policy", SET, "forever")], ErrorCode.INVALID_CONFIG,
     "Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete"),
    ([("no.such.setting", SET, "1")], ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such.setting"),
    ([("retention.ms", APPEND, "1")], ErrorCode.INVALID_CONFIG,
     "Can't APPEND to key retention.ms because its type is not LIST."),
    ([("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], ErrorCode.INVALID_REQUEST,
     "Error due to duplicate config keys"),
    ([("retention.ms", SET, None)], ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms"),
    ([("retention.ms", 7, "1")], ErrorCode.INVALID_REQUEST, "Unknown operations type 7"),
])
def test_bad_changes_get_kafkas_errors_and_change_nothing(wire, ops, code, message):
    topic = unique()
    create_topic(wire, topic)
    # a valid change beside the bad one is not applied either
    assert incremental(wire, topic, ("retention.bytes", SET, "12345"), *ops) == (code, message)
    assert described(wire, topic)["retention.bytes"].config_source == DEFAULT_CONFIG


def test_unknown_topics_validate_only_and_other_resource_types(wire):
    missing = unique("missing")
    assert incremental(wire, missing, ("retention.ms", SET, "1000")) == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{missing}' does not exist.")
    assert legacy(wire, missing, {"retention.ms": "1000"})[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    topic = unique()
    create_topic(wire, topic)
    assert incremental(wire, topic, ("retention.ms", SET, "1000"), validate_only=True) == (0, None)
    assert legacy(wire, topic, {"retention.ms": "1000"}, validate_only=True) == (0, None)
    assert described(wire, topic)["retention.ms"].config_source == DEFAULT_CONFIG
    assert legacy(wire, "0", {"log.retention.ms": "1"}, resource_type=BROKER) == (
        ErrorCode.INVALID_REQUEST, "Altering BROKER configs is not supported by this server.")
    assert legacy(wire, topic, {"retention.ms": None})[0] == ErrorCode.INVALID_REQUEST


def test_topic_settings_survive_a_restart_and_a_lowered_retention_applies_live(server_factory, connect):
    server = server_factory("log.cleaner.backoff.ms=200", "log.segment.bytes=200")  # a few records per segment
    wire = connect(server)
    topic = unique()
    create_topic(wire, topic, configs={"segment.ms": "3600000"})
    old = int(time.time() * 1000) - 3_600_000  # an hour ago: kept under the default retention (7 days)
    for _ in range(6):
        produce(wire, topic, 0, 2, timestamp=old)
    time.sleep(1)
    assert list_offset(wire, topic, 0, EARLIEST).offset == 0
    assert incremental(wire, topic, ("retention.ms", SET, "60000")) == (0, None)
    deadline = time.monotonic() + 10
    while list_offset(wire, topic, 0, EARLIEST).offset == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list_offset(wire, topic, 0, EARLIEST).offset > 0  # closed segments past retention went
    server.stop()
    server.start()
    server.wait_ready()
    configs = described(connect(server), topic)
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("60000", DYNAMIC_TOPIC_CONFIG)
    assert (configs["segment.ms"].value, configs["segment.ms"].config_source) == ("3600000", DYNAMIC_TOPIC_CONFIG)
