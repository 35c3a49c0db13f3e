"""CreateTopics over the wire: defaults, validation in Kafka's order, validate_only, v5+ details."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreateTopicsRequest, MetadataRequest
from protocol.primitives import ZERO_UUID

Topic = CreateTopicsRequest.CreatableTopic
Assignment = CreateTopicsRequest.CreatableReplicaAssignment
Config = CreateTopicsRequest.CreatableTopicConfig
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


def unique(stem: str = "ct") -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def create(wire, version: int, *topics: Topic, validate_only: bool = False):
    return wire.request(ApiKey.CREATE_TOPICS, version, CreateTopicsRequest(topics=list(topics),
                                                                            validate_only=validate_only))


def partitions_of(wire, name: str) -> int | None:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(ZERO_UUID, name)],
                              allow_auto_topic_creation=False)
    [topic] = wire.request(ApiKey.METADATA, 12, request).topics
    return len(topic.partitions) if topic.error_code == ErrorCode.NONE else None


@pytest.mark.parametrize("version", range(2, 8))
def test_topic_is_created_at_every_served_version(wire, version):
    name = unique()
    [result] = create(wire, version, Topic(name, 3, 1, [], [])).topics
    assert (result.name, result.error_code) == (name, ErrorCode.NONE)
    assert partitions_of(wire, name) == 3
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (3, 1)
        assert {c.name for c in result.configs} >= {"cleanup.policy", "retention.ms", "segment.bytes"}
    if version >= 7:
        assert result.topic_id != ZERO_UUID


def test_minus_one_takes_the_broker_defaults(wire):
    name = unique()
    [result] = create(wire, 7, Topic(name, -1, -1, [], [])).topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 1, 1)


def test_configs_are_echoed_with_their_source(wire):
    name = unique()
    [result] = create(wire, 5, Topic(name, 1, 1, [], [Config("cleanup.policy", "compact")])).topics
    configs = {c.name: (c.value, c.config_source) for c in result.configs}
    assert configs["cleanup.policy"] == ("compact", DYNAMIC_TOPIC_CONFIG)
    assert configs["retention.ms"] == ("604800000", DEFAULT_CONFIG)


@pytest.mark.parametrize("topic, code", [
    (Topic("rf3", 1, 3, [], []), ErrorCode.INVALID_REPLICATION_FACTOR),
    (Topic("rf0", 1, 0, [], []), ErrorCode.INVALID_REPLICATION_FACTOR),
    (Topic("p0", 0, 1, [], []), ErrorCode.INVALID_PARTITIONS),
    (Topic("pneg", -5, 1, [], []), ErrorCode.INVALID_PARTITIONS),
    (Topic("bad name", 1, 1, [], []), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (Topic("both", 2, -1, [Assignment(0, [0])], []), ErrorCode.INVALID_REQUEST),
    (Topic("other-broker", -1, -1, [Assignment(0, [1])], []), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (Topic("gap", -1, -1, [Assignment(0, [0]), Assignment(2, [0])], []), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (Topic("cfg", 1, 1, [], [Config("no.such.config", "1")]), ErrorCode.INVALID_CONFIG),
    (Topic("cfgval", 1, 1, [], [Config("retention.ms", "soon")]), ErrorCode.INVALID_CONFIG),
])
def test_invalid_topics_are_refused_with_kafkas_error(wire, topic, code):
    topic.name = f"{topic.name}-{uuid.uuid4().hex[:6]}" if " " not in topic.name else topic.name
    [result] = create(wire, 7, topic).topics
    assert (result.name, result.error_code) == (topic.name, code)
    assert result.error_message
    assert (result.num_partitions, result.replication_factor, result.topic_id) == (-1, -1, ZERO_UUID)
    if code is not ErrorCode.INVALID_TOPIC_EXCEPTION:
        assert partitions_of(wire, topic.name) is None


def test_manual_assignment_on_this_node_creates_one_partition_per_entry(wire):
    name = unique()
    [result] = create(wire, 7, Topic(name, -1, -1, [Assignment(1, [0]), Assignment(0, [0])], [])).topics
    assert (result.error_code, result.num_partitions) == (ErrorCode.NONE, 2)
    assert partitions_of(wire, name) == 2


def test_existing_topic_is_topic_already_exists(wire):
    name = unique()
    create(wire, 7, Topic(name, 1, 1, [], []))
    [result] = create(wire, 7, Topic(name, 4, 1, [], [])).topics
    assert result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert partitions_of(wire, name) == 1


def test_name_given_twice_is_refused_once_and_not_created(wire):
    twice, once = unique(), unique()
    response = create(wire, 7, Topic(twice, 1, 1, [], []), Topic(once, 1, 1, [], []), Topic(twice, 2, 1, [], []))
    assert sorted((t.name, t.error_code) for t in response.topics) == sorted(
        [(twice, ErrorCode.INVALID_REQUEST), (once, ErrorCode.NONE)])
    assert partitions_of(wire, twice) is None


def test_validate_only_answers_without_creating(wire):
    name = unique()
    [result] = create(wire, 7, Topic(name, 2, 1, [], []), validate_only=True).topics
    assert (result.error_code, result.num_partitions) == (ErrorCode.NONE, 2)
    assert partitions_of(wire, name) is None
