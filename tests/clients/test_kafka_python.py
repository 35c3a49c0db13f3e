"""kafka-python's KafkaAdminClient creates a topic and sees it in metadata."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]


@pytest.fixture
def admin(bootstrap):
    client = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="groupcoord-kafka-python-test",
        request_timeout_ms=10_000,
        bootstrap_timeout_ms=10_000,
        reconnect_backoff_max_ms=500,
    )
    yield client
    client.close()


def test_kafka_python_admin_creates_a_six_partition_topic_that_metadata_then_reports(admin, topic_name):
    admin.create_topics({topic_name: {"num_partitions": 6, "replication_factor": 1}}, timeout_ms=10_000)

    assert topic_name in admin.list_topics()

    [described] = admin.describe_topics([topic_name])
    assert described["name"] == topic_name
    assert described["error_code"] == 0
    assert sorted(p["partition_index"] for p in described["partitions"]) == list(range(6))
