"""DescribeCluster, DescribeGroups' authorized operations and DescribeConfigs over the wire."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    CreateTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
)

TOPIC, BROKER = 2, 4
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
BOOLEAN, INT, LONG = 1, 3, 5
Resource = DescribeConfigsRequest.DescribeConfigsResource


@pytest.mark.parametrize("version", [0, 1])
def test_describe_cluster_names_this_node_as_broker_and_controller(wire, shared_server, version):
    response = wire.request(ApiKey.DESCRIBE_CLUSTER, version, DescribeClusterRequest())
    assert response.error_code == ErrorCode.NONE
    assert response.controller_id == 0 and response.cluster_id
    assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [
        (0, shared_server.host, shared_server.port, None)]
    assert response.cluster_authorized_operations == -(2**31)


def test_describe_cluster_cluster_id_matches_meta_properties(wire, shared_server):
    response = wire.request(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest())
    assert f"cluster.id={response.cluster_id}" in (shared_server.data_dir / "meta.properties").read_text()


def test_describe_cluster_for_controllers_is_mismatched_endpoint_type(wire):
    response = wire.request(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(endpoint_type=2))
    assert response.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE and response.brokers == []
    unknown = wire.request(ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(endpoint_type=9))
    assert unknown.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


def test_describe_cluster_authorized_operations_when_asked(wire):
    response = wire.request(ApiKey.DESCRIBE_CLUSTER, 1,
                            DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert response.cluster_authorized_operations == 8096


@pytest.mark.parametrize("version", [3, 5])
def test_describe_groups_authorized_operations_when_asked(wire, version):
    """As Kafka 4.4 answers (found by tests/differential): without an authorizer every group operation
    (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3400), also for an unknown (Dead) group."""
    group = f"ops-{uuid.uuid4().hex[:8]}"
    asked = wire.request(ApiKey.DESCRIBE_GROUPS, version,
                         DescribeGroupsRequest(groups=[group], include_authorized_operations=True))
    assert [(g.group_state, g.authorized_operations) for g in asked.groups] == [("Dead", 3400)]
    not_asked = wire.request(ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=[group]))
    assert not_asked.groups[0].authorized_operations == -(2**31)


def describe(wire, version, *resources, synonyms=False, docs=False):
    request = DescribeConfigsRequest(resources=list(resources), include_synonyms=synonyms,
                                     include_documentation=docs)
    return wire.request(ApiKey.DESCRIBE_CONFIGS, version, request).results


@pytest.mark.parametrize("version", range(0, 5))
def test_broker_configs_list_every_setting(wire, version):
    [result] = describe(wire, version, Resource(BROKER, "0", None))
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: c for c in result.configs}
    assert configs["num.partitions"].value == "1"
    assert configs["offsets.topic.num.partitions"].value == "50"
    assert configs["listeners"].config_source in (STATIC_BROKER_CONFIG, -1)  # -1: v0 has no source
    assert not any(c.is_sensitive for c in result.configs if c.name != "ssl.key.password")
    # read_only as Kafka's DynamicBrokerConfig: listeners and log defaults are dynamic, node.id is not
    assert configs["node.id"].read_only and not configs["listeners"].read_only
    assert configs["num.partitions"].read_only and not configs["log.retention.ms"].read_only
    # unset without a default: null, as Kafka
    assert configs["advertised.listeners"].value is None and configs["ssl.keystore.location"].value is None
    if version >= 1:
        assert configs["num.partitions"].config_source == DEFAULT_CONFIG
        assert configs["log.dirs"].config_source == STATIC_BROKER_CONFIG  # the fixture's --override
    if version >= 3:
        assert configs["num.partitions"].config_type == INT
        assert configs["connections.max.idle.ms"].config_type == LONG
        assert configs["auto.create.topics.enable"].config_type == BOOLEAN


def test_broker_configs_filtered_by_name_with_synonyms_and_documentation(wire):
    [result] = describe(wire, 4, Resource(BROKER, "0", ["log.dirs", "group.max.size", "nope"]), synonyms=True,
                        docs=True)
    configs = {c.name: c for c in result.configs}
    assert sorted(configs) == ["group.max.size", "log.dirs"]
    assert [(s.name, s.source) for s in configs["log.dirs"].synonyms] == [
        ("log.dirs", STATIC_BROKER_CONFIG), ("log.dirs", DEFAULT_CONFIG)]
    assert configs["log.dirs"].synonyms[1].value == "./data"
    assert configs["group.max.size"].documentation


def test_other_broker_id_is_invalid_request(wire):
    [result, word] = describe(wire, 4, Resource(BROKER, "7", None), Resource(BROKER, "zero", None))
    assert result.error_code == ErrorCode.INVALID_REQUEST and result.configs == []
    assert (word.error_code, word.error_message) == (ErrorCode.INVALID_REQUEST,
                                                     "Broker id must be an integer, but it is: zero")


def test_empty_broker_name_lists_the_dynamic_defaults_of_which_there_are_none(wire):
    # ConfigHelper: "" describes currentDynamicDefaultConfigs (kafka-configs.sh --entity-default)
    [result] = describe(wire, 4, Resource(BROKER, "", None))
    assert (result.error_code, result.configs) == (ErrorCode.NONE, [])


def test_topic_configs_show_overrides_and_defaults(wire):
    name = f"dc-{uuid.uuid4().hex[:10]}"
    topic = CreateTopicsRequest.CreatableTopic(name, 1, 1, [], [
        CreateTopicsRequest.CreatableTopicConfig("retention.ms", "1000")])
    assert wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest([topic])).topics[0].error_code == 0
    [result] = describe(wire, 4, Resource(TOPIC, name, None), synonyms=True)
    assert result.error_code == ErrorCode.NONE
    configs = {c.name: c for c in result.configs}
    assert {"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes", "min.insync.replicas"} <= set(configs)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == ("1000", DYNAMIC_TOPIC_CONFIG, False)
    # As Kafka 4.4 answers: no DEFAULT_CONFIG synonym for retention.ms (log.retention.ms defaults to null there).
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [("retention.ms", "1000", DYNAMIC_TOPIC_CONFIG)]
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].config_source) == ("delete", DEFAULT_CONFIG)


def test_topic_config_default_set_on_the_broker_is_static_broker_config(server_factory, connect):
    srv = server_factory("log.retention.ms=5000")
    wire = connect(srv)
    name = f"dc-{uuid.uuid4().hex[:10]}"
    wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest([CreateTopicsRequest.CreatableTopic(name, 1, 1, [], [])]))
    [result] = describe(wire, 4, Resource(TOPIC, name, ["retention.ms"]), synonyms=True)
    [retention] = result.configs
    assert (retention.value, retention.config_source) == ("5000", STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        # as Kafka 4.4
        ("log.retention.ms", "5000", STATIC_BROKER_CONFIG), ("log.retention.hours", "168", DEFAULT_CONFIG)]


def test_unknown_and_illegal_topics(wire):
    unknown, illegal = describe(wire, 2, Resource(TOPIC, "no-such-topic-here", None), Resource(TOPIC, "a b", None))
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert illegal.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_unsupported_resource_type_is_invalid_request_per_resource(wire):
    group, broker = describe(wire, 4, Resource(3, "some-group", None), Resource(BROKER, "0", ["node.id"]))
    assert group.error_code == ErrorCode.INVALID_REQUEST
    assert broker.error_code == ErrorCode.NONE and [c.value for c in broker.configs] == ["0"]
