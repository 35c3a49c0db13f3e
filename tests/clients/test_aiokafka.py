"""aiokafka's AIOKafkaAdminClient creates a topic and sees it in metadata."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

CALL_TIMEOUT_S = 15  # per admin call: a silent server fails the test fast


async def test_aiokafka_admin_creates_a_six_partition_topic_that_metadata_then_reports(bootstrap, topic_name):
    admin = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="groupcoord-aiokafka-test",
        request_timeout_ms=10_000,
    )
    try:
        await asyncio.wait_for(admin.start(), CALL_TIMEOUT_S)
        response = await asyncio.wait_for(
            admin.create_topics([NewTopic(topic_name, num_partitions=6, replication_factor=1)], timeout_ms=10_000),
            CALL_TIMEOUT_S,
        )
        errors = [(t[0], t[1]) for t in response.topic_errors]
        assert errors == [(topic_name, 0)], response

        assert topic_name in await asyncio.wait_for(admin.list_topics(), CALL_TIMEOUT_S)

        [described] = await asyncio.wait_for(admin.describe_topics([topic_name]), CALL_TIMEOUT_S)
        assert described["topic"] == topic_name
        assert described["error_code"] == 0
        assert sorted(p["partition"] for p in described["partitions"]) == list(range(6))
    finally:
        await asyncio.wait_for(admin.close(), CALL_TIMEOUT_S)
