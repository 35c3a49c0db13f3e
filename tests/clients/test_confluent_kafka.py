"""confluent-kafka's AdminClient (librdkafka) creates a topic and sees it in metadata."""

from __future__ import annotations

import logging

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]


def test_confluent_admin_creates_a_six_partition_topic_that_metadata_then_reports(bootstrap, topic_name):
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "groupcoord-confluent-test",
            "socket.timeout.ms": 10_000,
            "socket.connection.setup.timeout.ms": 5_000,
            # librdkafka's log lines go through `logging`, so pytest shows them with a failing test
            # instead of spraying stderr.
            "logger": logging.getLogger("librdkafka"),
        }
    )
    try:
        futures = admin.create_topics(
            [NewTopic(topic_name, num_partitions=6, replication_factor=1)], operation_timeout=10, request_timeout=15
        )
        created = futures[topic_name].result(timeout=20)
        metadata = admin.list_topics(timeout=10)
    finally:
        # Drop the only reference so librdkafka's threads stop now; a failing test's traceback would
        # otherwise keep the client alive, reconnecting to the stopped server for the rest of the run.
        del admin

    assert created is None
    assert topic_name in metadata.topics
    topic = metadata.topics[topic_name]
    assert topic.error is None
    assert sorted(topic.partitions) == list(range(6))

    [broker] = metadata.brokers.values()
    assert (broker.host, broker.port) == ("127.0.0.1", int(bootstrap.rsplit(":", 1)[1]))
