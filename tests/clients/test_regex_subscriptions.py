"""KIP-848 regular expression subscriptions with librdkafka (confluent-kafka, `group.protocol=consumer`):
`subscribe(["^orders-.*"])` sends SubscribedTopicRegex and the server resolves it
(docs/spec/consumer-protocol.md#regular-expressions). The group gets every partition of the matching topics,
those of a matching topic created later within 30 s, and never a partition of a topic that does not match."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from .polling_member import PollingMember, assigned_exactly_once, wait_for
from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]

LOG = logging.getLogger("librdkafka")
SERVER_SETTINGS = ("group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500",
                   "group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000")


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    futures = admin.create_topics([NewTopic(name, num_partitions=n, replication_factor=1)
                                   for name, n in topics.items()])
    for future in futures.values():
        future.result(20)


def test_a_librdkafka_regex_group_gets_matching_topics_and_those_created_later(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    prefix = f"orders-{topic_name[-8:]}"
    create_topics(server.bootstrap, {f"{prefix}-a": 3, f"{prefix}-b": 1, f"other-{prefix}": 2, f"{prefix}x": 1})
    group = f"g-{topic_name}"
    config = {"bootstrap.servers": server.bootstrap, "group.id": group, "group.protocol": "consumer", "logger": LOG,
              "auto.offset.reset": "earliest"}
    members = [PollingMember(config, [f"^{prefix}-.*"], f"regex-{i}") for i in range(2)]
    try:
        for member in members:
            member.start()
        wanted = {(f"{prefix}-a", p) for p in range(3)} | {(f"{prefix}-b", 0)}
        wait_for(lambda: assigned_exactly_once(members, wanted), 45, lambda: [m.snapshot() for m in members])

        create_topics(server.bootstrap, {f"{prefix}-c": 2, f"not-{prefix}-c": 2})
        wanted |= {(f"{prefix}-c", p) for p in range(2)}
        took = wait_for(lambda: assigned_exactly_once(members, wanted), 30, lambda: [m.snapshot() for m in members])
        logging.getLogger(__name__).info("new matching topic assigned after %.1f s", took)
        assert all(m.errors == [] for m in members)
        assert {topic for m in members for topic, _ in m.ever} <= {f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"}
    finally:
        for member in members:
            member.stop()

