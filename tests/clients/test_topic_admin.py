"""The topic admin surface with real admin clients: DeleteRecords, topic configs (retention applied
live), DescribeTopicPartitions, DescribeLogDirs, ElectLeaders, partition reassignments and the
metadata quorum, through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType

from tests.clients.support import CLIENT_TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka")})


def _produce(bootstrap: str, topic: str, count: int, timestamp_ms: int | None = None) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0,
                         timestamp=timestamp_ms or 0)
        producer.flush(10)  # one batch per message: several segments when segment.bytes is small
    assert producer.flush(10) == 0


def _earliest(admin: AdminClient, topic: str) -> int:
    tp = TopicPartition(topic, 0)
    return admin.list_offsets({tp: OffsetSpec.earliest()})[tp].result(20).offset


def _error_name(exc: BaseException) -> str:
    return exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else repr(exc)


def test_confluent_deletes_records_and_a_consumer_starts_at_the_new_low_watermark(bootstrap, topic_name):
    admin = _admin(bootstrap)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(20)
    _produce(bootstrap, topic_name, 10)
    [future] = admin.delete_records([TopicPartition(topic_name, 0, 6)]).values()
    assert future.result(20).low_watermark == 6
    assert _earliest(admin, topic_name) == 6
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic_name}-g",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic_name])
        seen: list[int] = []
        deadline = time.monotonic() + 30
        while len(seen) < 4 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.offset())
        assert seen == [6, 7, 8, 9]
    finally:
        consumer.close()
    [past] = admin.delete_records([TopicPartition(topic_name, 0, 11)]).values()
    with pytest.raises(KafkaException) as refused:
        past.result(20)
    assert _error_name(refused.value) == "OFFSET_OUT_OF_RANGE"
    [unknown] = admin.delete_records([TopicPartition(f"{topic_name}-missing", 0, 0)]).values()
    with pytest.raises(KafkaException):
        unknown.result(20)
    assert _earliest(admin, topic_name) == 6


def test_confluent_alters_topic_configs_and_a_lowered_retention_applies_live(server_factory, topic_name):
    server = server_factory("log.cleaner.backoff.ms=200", "log.segment.bytes=300")  # a few records per segment
    admin = _admin(server.bootstrap)
    admin.create_topics([NewTopic(topic_name, 1, 1)])[topic_name].result(20)
    _produce(server.bootstrap, topic_name, 8, timestamp_ms=int(time.time() * 1000) - 3_600_000)
    assert _earliest(admin, topic_name) == 0

    resource = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(20)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic_name)])
    configs = next(iter(described.values())).result(20)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    deadline = time.monotonic() + 20
    while _earliest(admin, topic_name) == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _earliest(admin, topic_name) > 0  # closed segments older than a minute are gone

    bad = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", "later", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([bad])[bad].result(20)
    assert _error_name(refused.value) == "INVALID_CONFIG"
    missing = ConfigResource(ResourceType.TOPIC, f"{topic_name}-missing", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as refused:
        admin.incremental_alter_configs([missing])[missing].result(20)
    assert _error_name(refused.value) == "UNKNOWN_TOPIC_OR_PART"  # librdkafka's name for it

    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic_name, 0)]).result(20)
    assert elected[TopicPartition(topic_name, 0)] is not None  # a KafkaError: ELECTION_NOT_NEEDED
    assert elected[TopicPartition(topic_name, 0)].name() == "ELECTION_NOT_NEEDED"


def test_kafka_python_admin_covers_records_configs_partitions_log_dirs_and_the_quorum(bootstrap, topic_name):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        from kafka.admin import NewTopic as KpNewTopic

        admin.create_topics([KpNewTopic(topic_name, 3, 1)])
        _produce(bootstrap, topic_name, 5)
        deleted = admin.delete_records({KpTopicPartition(topic_name, 0): 3})
        assert deleted[KpTopicPartition(topic_name, 0)]["low_watermark"] == 3

        resource = KpConfigResource(ConfigResourceType.TOPIC, topic_name, configs={"retention.ms": "7200000"})
        admin.alter_configs([resource])
        described = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic_name)])
        entry = described["topic"][topic_name]["retention.ms"]  # only modified settings, by default
        assert (entry["value"], entry["config_source"]) == ("7200000", "DYNAMIC_TOPIC_CONFIG")

        partitions = admin.describe_topic_partitions([topic_name], response_partition_limit=2)
        assert [p["partition_index"] for t in partitions["topics"] for p in t["partitions"]] == [0, 1]
        assert partitions["next_cursor"] == {"topic_name": topic_name, "partition_index": 2}

        [node] = admin.describe_log_dirs({topic_name: [0]})
        [log_dir] = node["log_dirs"]
        [topic] = log_dir["topics"]
        [partition] = topic["partitions"]
        assert (node["broker"], log_dir["error_code"], topic["name"]) == (0, 0, topic_name)
        assert partition["partition_size"] > 0 and partition["offset_lag"] == 0 and not partition["is_future_key"]
        assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0

        [quorum] = admin.describe_metadata_quorum()["topics"][0]["partitions"]
        assert (quorum["leader_id"], [v["replica_id"] for v in quorum["current_voters"]], quorum["observers"]) == (
            0, [0], [])
        assert admin.list_partition_reassignments() == {}
        admin.alter_partition_reassignments({KpTopicPartition(topic_name, 1): [0]})  # already so: accepted
    finally:
        admin.close()
