"""Real clients in mixed groups (docs/spec/consumer-protocol.md#migration): confluent-kafka members on the classic
protocol and on the consumer protocol (KIP-848) in one group, and a rolling upgrade from one protocol to the other and
back.

Members, timelines and checks are those of test_consumer_protocol.py: every message read once, no
partition owned by two members at a time, commits kept across the protocol changes.
"""

from __future__ import annotations

import threading
import time

import pytest

from .support import CLIENT_TEST_TIMEOUT_S
from .test_consumer_protocol import (
    MESSAGES,
    PARTITIONS,
    SERVER_SETTINGS,
    Member,
    Timeline,
    assert_group_read_everything,
    consumer_config,
    create_topic,
    describe,
    end_offsets,
    produce,
    wait_until,
)

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]


def _owned_by_all(timeline: Timeline, names: set[str]) -> bool:
    owners = timeline.owners()
    return len(owners) == PARTITIONS and set(owners.values()) == names


def test_classic_and_consumer_protocol_members_share_one_group(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    bootstrap = server.bootstrap
    create_topic(bootstrap, topic_name)
    group, timeline = f"mixed-{topic_name}", Timeline()
    members: list[Member] = []
    producer = threading.Thread(target=produce, args=(bootstrap, topic_name, range(MESSAGES), 1000), daemon=True)
    try:
        for name, protocol in (("classic0", "classic"), ("consumer0", "consumer"), ("classic1", "classic"),
                               ("consumer1", "consumer")):
            member = Member(name, consumer_config(bootstrap, group, protocol), topic_name, timeline)
            members.append(member)
            member.start()
            time.sleep(1.0)
        producer.start()
        wait_until(lambda: _owned_by_all(timeline, {m.name for m in members}), 60, "all four members owning")
        producer.join(60)
        ends = end_offsets(bootstrap, topic_name)
        wait_until(lambda: len({(p, o) for m in members for p, o, _ in m.consumed}) == MESSAGES, 60,
                   "every message read")
        description = describe(bootstrap, group)
    finally:
        for member in members:
            member.stop()
    assert_group_read_everything(members, timeline, ends)
    assert len(description.members) == 4


def test_a_rolling_upgrade_to_the_consumer_protocol_and_back_keeps_the_offsets(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    bootstrap = server.bootstrap
    create_topic(bootstrap, topic_name)
    group, timeline = f"rolling-{topic_name}", Timeline()
    members: list[Member] = []

    def start(name: str, protocol: str) -> Member:
        member = Member(name, consumer_config(bootstrap, group, protocol), topic_name, timeline)
        members.append(member)
        member.start()
        return member

    producer = threading.Thread(target=produce, args=(bootstrap, topic_name, range(MESSAGES), 400), daemon=True)
    try:
        live = [start(f"classic{i}", "classic") for i in range(3)]
        wait_until(lambda: _owned_by_all(timeline, {m.name for m in live}), 60, "three classic members owning")
        producer.start()
        for protocol, prefix in (("consumer", "upgraded"), ("classic", "downgraded")):
            for i in range(3):
                live[i].stop()  # restarted one by one with the other protocol, while messages arrive
                live[i] = start(f"{prefix}{i}", protocol)
                wait_until(lambda: _owned_by_all(timeline, {m.name for m in live}), 60, f"{live[i].name} owning")
            if protocol == "consumer":
                description = describe(bootstrap, group)  # ConsumerGroupDescribe: a consumer group now
                assert len(description.members) == 3
        producer.join(120)
        ends = end_offsets(bootstrap, topic_name)
        wait_until(lambda: len({(p, o) for m in members for p, o, _ in m.consumed}) == MESSAGES, 60,
                   "every message read")
    finally:
        for member in members:
            if member.is_alive():
                member.stop()
    assert_group_read_everything(members, timeline, ends)
