"""Static membership with aiokafka (`group_instance_id`): a follower that restarts within its session
timeout gets its partitions back and the group does not rebalance (KIP-345)."""

from __future__ import annotations

import asyncio
import json

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS, SESSION_TIMEOUT_MS = 6, 10_000


def completed_generations(server, group: str) -> list[int]:
    """The server logs `join_completed` with the new generation each time a join phase completes
    (DescribeGroups has no generation field): no new event, no rebalance."""
    events = (json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{"))
    return [e["generation_id"] for e in events if e.get("event") == "join_completed" and e.get("group_id") == group]


async def _static_consumer(bootstrap: str, topic: str, group: str, instance: str) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance,
                                client_id=instance, enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS,
                                heartbeat_interval_ms=1000)
    await asyncio.wait_for(consumer.start(), 20)
    return consumer


async def _poll(consumers: list[AIOKafkaConsumer], until, timeout_s: float = 30) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not until():
        assert loop.time() < deadline, "timed out waiting for the group"
        await asyncio.gather(*(c.getmany(timeout_ms=100) for c in consumers))


async def test_an_aiokafka_static_follower_restart_keeps_the_generation_and_its_partitions(server_factory, topic_name):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    group = f"static-{topic_name}"
    admin = AIOKafkaAdminClient(bootstrap_servers=server.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic_name, num_partitions=PARTITIONS, replication_factor=1)])
    finally:
        await admin.close()

    leader = await _static_consumer(server.bootstrap, topic_name, group, "static-leader")
    consumers = {"static-leader": leader}
    try:
        await _poll([leader], lambda: len(leader.assignment()) == PARTITIONS)
        consumers["static-follower"] = await _static_consumer(server.bootstrap, topic_name, group, "static-follower")
        await _poll(list(consumers.values()),
                    lambda: all(c.assignment() for c in consumers.values())
                    and sum(len(c.assignment()) for c in consumers.values()) == PARTITIONS)
        before = sorted(tp.partition for tp in consumers["static-follower"].assignment())
        generation = completed_generations(server, group)[-1]

        await consumers.pop("static-follower").stop()  # no LeaveGroup from a static member
        follower = await _static_consumer(server.bootstrap, topic_name, group, "static-follower")
        consumers["static-follower"] = follower
        await _poll(list(consumers.values()), lambda: bool(follower.assignment()))
        # Past the old incarnation's session: a server still timing it would evict and rebalance now.
        loop = asyncio.get_running_loop()
        until = loop.time() + SESSION_TIMEOUT_MS / 1000 + 2
        await _poll(list(consumers.values()), lambda: loop.time() > until, timeout_s=SESSION_TIMEOUT_MS / 1000 + 10)

        assert completed_generations(server, group)[-1] == generation, "the restart caused a rebalance"
        assert sorted(tp.partition for tp in follower.assignment()) == before
        assert len(leader.assignment()) == PARTITIONS - len(before)
    finally:
        await asyncio.gather(*(c.stop() for c in consumers.values()), return_exceptions=True)
