"""Per-group settings with a real admin client: confluent-kafka's incremental_alter_configs and
describe_configs on ConfigResource(ResourceType.GROUP, ...), a consumer-protocol consumer that
gets the group's heartbeat interval, and the setting surviving a server restart."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from protocol.api_keys import ApiKey
from protocol.messages import ConsumerGroupHeartbeatRequest
from tests.clients.support import CLIENT_TEST_TIMEOUT_S
from tests.server.conftest import KafkaWire

pytestmark = pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)

GROUP = "configured"


def _admin(server) -> AdminClient:  # type: ignore[no-untyped-def]
    return AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})


def _set(admin: AdminClient, group: str, name: str, value: str | None,
         op: AlterConfigOpType = AlterConfigOpType.SET) -> None:
    resource = ConfigResource(ResourceType.GROUP, group,
                              incremental_configs=[ConfigEntry(name, value, incremental_operation=op)])
    admin.incremental_alter_configs([resource])[resource].result(20)


def _describe(admin: AdminClient, group: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.GROUP, group)
    return admin.describe_configs([resource])[resource].result(20)


def test_confluent_admin_sets_describes_and_deletes_group_configs_that_survive_a_restart(server_factory):
    server = server_factory()
    admin = _admin(server)
    _set(admin, GROUP, "consumer.heartbeat.interval.ms", "6000")
    _set(admin, GROUP, "consumer.assignment.interval.ms", "0")
    _set(admin, GROUP, "share.record.lock.duration.ms", "20000")
    configs = _describe(admin, GROUP)
    assert {n: e.value for n, e in configs.items()} == {
        "consumer.assignment.interval.ms": "0", "consumer.heartbeat.interval.ms": "6000",
        "consumer.session.timeout.ms": "45000", "share.auto.offset.reset": "latest",
        "share.delivery.count.limit": "5", "share.heartbeat.interval.ms": "5000",
        "share.isolation.level": "read_uncommitted", "share.partition.max.record.locks": "2000",
        "share.record.lock.duration.ms": "20000", "share.renew.acknowledge.enable": "true",
        "share.session.timeout.ms": "45000"}
    assert configs["consumer.heartbeat.interval.ms"].source == ConfigSource.GROUP_CONFIG.value
    assert configs["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    with pytest.raises(KafkaException) as refused:
        _set(admin, GROUP, "consumer.session.timeout.ms", "1000")
    assert "must be in the range 45000 to 60000 inclusive" in str(refused.value)

    server.stop()
    server.start()
    server.wait_ready()
    admin = _admin(server)
    configs = _describe(admin, GROUP)
    assert configs["consumer.heartbeat.interval.ms"].value == "6000"
    assert configs["share.record.lock.duration.ms"].value == "20000"
    _set(admin, GROUP, "consumer.assignment.interval.ms", None, AlterConfigOpType.DELETE)
    configs = _describe(admin, GROUP)
    assert configs["consumer.assignment.interval.ms"].value == "1000"
    assert configs["consumer.assignment.interval.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_a_consumer_protocol_consumer_gets_partitions_under_its_groups_settings(server_factory):
    server = server_factory()
    admin = _admin(server)
    admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(20)
    _set(admin, "fast", "consumer.heartbeat.interval.ms", "6000")
    _set(admin, "fast", "consumer.assignment.interval.ms", "0")
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "fast", "group.protocol": "consumer",
                         "logger": logging.getLogger("librdkafka")})
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.2)
    finally:
        consumer.close()
    # What the group's members are told, seen on the wire.
    wire = KafkaWire(server.host, server.port)
    try:
        response = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
            group_id="fast", member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=["orders"], topic_partitions=[]))
    finally:
        wire.close()
    assert response.heartbeat_interval_ms == 6000
