"""Growing a topic (CreatePartitions, issue 20 item 2) under live groups of confluent-kafka consumers: 3 -> 6
partitions, all 6 assigned exactly once within 30 s.

- Consumer protocol (KIP-848): the members' next heartbeats see the topic's new partition count, the group
  epoch goes up and the assignor hands out the new partitions.
- Classic protocol, static members, after a bounce of the static leader: the leader comes back under its
  instance id (KIP-345/KIP-814), later notices the new partitions in its metadata and rejoins; the server
  answers that rejoin with a rebalance, and the leader's new assignment covers all six partitions.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from .polling_member import PollingMember, assigned_exactly_once, wait_for
from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]

LOG = logging.getLogger("librdkafka")
SERVER_SETTINGS = ("group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500",
                   "group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000",
                   "group.initial.rebalance.delay.ms=0")


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(20)


def exactly_once(members: list[PollingMember], partitions: int) -> bool:
    return assigned_exactly_once(members, {(members[0].subscription[0], p) for p in range(partitions)})


def test_three_consumer_protocol_members_get_the_new_partitions_of_a_grown_topic(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    create_topic(server.bootstrap, topic_name, 3)
    config = {"bootstrap.servers": server.bootstrap, "group.id": f"g-{topic_name}", "group.protocol": "consumer",
              "logger": LOG, "topic.metadata.refresh.interval.ms": 1000}
    members = [PollingMember(config, [topic_name], f"m{i}") for i in range(3)]
    try:
        for member in members:
            member.start()
        wait_for(lambda: exactly_once(members, 3), 45, lambda: [m.snapshot() for m in members])
        admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": LOG})
        admin.create_partitions([NewPartitions(topic_name, 6)])[topic_name].result(20)
        took = wait_for(lambda: exactly_once(members, 6), 30, lambda: [m.snapshot() for m in members])
        logging.getLogger(__name__).info("consumer protocol: 6 partitions assigned %.1f s after the growth", took)
        assert all(m.errors == [] for m in members)
    finally:
        for member in members:
            member.stop()


def test_three_static_classic_members_get_the_new_partitions_after_a_static_leader_bounce(server_factory,
                                                                                          topic_name):
    server = server_factory(*SERVER_SETTINGS)
    create_topic(server.bootstrap, topic_name, 3)

    def member(i: int) -> PollingMember:
        config = {"bootstrap.servers": server.bootstrap, "group.id": f"g-{topic_name}", "group.protocol": "classic",
                  "group.instance.id": f"static-{i}", "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
                  "logger": LOG, "topic.metadata.refresh.interval.ms": 1000,
                  "partition.assignment.strategy": "range"}
        return PollingMember(config, [topic_name], f"static-{i}")

    # The first member to join leads the group; the others join once it owns everything.
    members = [member(0)]
    members[0].start()
    wait_for(lambda: exactly_once(members, 3), 45, lambda: [m.snapshot() for m in members])
    members += [member(1), member(2)]
    try:
        for m in members[1:]:
            m.start()
        wait_for(lambda: exactly_once(members, 3) and all(m.snapshot() for m in members), 45,
                 lambda: [m.snapshot() for m in members])
        # Bounce the static leader: a static member's close does not leave the group, and its successor
        # comes back under the same instance id within the session timeout (no rebalance for the others).
        members[0].stop()
        members[0] = member(0)
        members[0].start()
        wait_for(lambda: exactly_once(members, 3), 45, lambda: [m.snapshot() for m in members])

        # Grow with the groupcoord CLI (kafka-topics.sh --alter --partitions).
        grown = subprocess.run([sys.executable, "-m", "coordinator", "topics", "--bootstrap-server", server.bootstrap,
                                "--alter", "--topic", topic_name, "--partitions", "6"],
                               capture_output=True, text=True, timeout=60)
        assert (grown.returncode, grown.stdout, grown.stderr) == (0, "", "")
        took = wait_for(lambda: exactly_once(members, 6), 30, lambda: [m.snapshot() for m in members])
        logging.getLogger(__name__).info("static classic group: 6 partitions assigned %.1f s after the growth", took)
        assert all(m.errors == [] for m in members)
    finally:
        for m in members:
            m.stop()


def test_the_new_partitions_take_produce_and_fetch_and_metadata_shows_them(server_factory, topic_name):
    server = server_factory()
    create_topic(server.bootstrap, topic_name, 1)
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": LOG})
    admin.create_partitions([NewPartitions(topic_name, 3)], validate_only=True)[topic_name].result(20)
    assert len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 1
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(20)
    assert len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 3
    producer = Producer({"bootstrap.servers": server.bootstrap, "logger": LOG})
    producer.produce(topic_name, value=b"in the new partition", partition=2)
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": f"g-{topic_name}", "logger": LOG,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic_name, 2, 0)])
        deadline = time.monotonic() + 20
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        assert message is not None and message.error() is None
        assert (message.partition(), message.offset(), message.value()) == (2, 0, b"in the new partition")
    finally:
        consumer.close()


def test_groupcoord_topics_alter_says_what_kafka_topics_says(server_factory, topic_name):
    """The refusals of `groupcoord topics --alter`, in kafka-topics.sh's words (tests/clients/
    test_java_tools_oracle.py compares Kafka's own tool against both servers)."""
    server = server_factory()
    create_topic(server.bootstrap, topic_name, 2)

    def topics(*args: str) -> tuple[int, str, str]:
        done = subprocess.run([sys.executable, "-m", "coordinator", "topics", "--bootstrap-server", server.bootstrap,
                               *args], capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout, done.stderr

    assert topics("--alter", "--topic", topic_name, "--partitions", "1") == (
        1, "", f"Error while executing topic command : The topic {topic_name} currently has 2 partition(s); 1 would "
               "not be an increase.\n")
    assert topics("--alter", "--topic", f"{topic_name}-none", "--partitions", "3") == (
        1, "", f"Error while executing topic command : Topic '{topic_name}-none' does not exist as expected\n")
    assert topics("--alter", "--topic", f"{topic_name}-none", "--partitions", "3", "--if-exists") == (0, "", "")
    assert topics("--alter", "--topic", topic_name)[0] == 2  # no --partitions: a usage error
    # --topic is a regular expression over whole names, as in kafka-topics.sh
    assert topics("--alter", "--topic", f"{topic_name[:-4]}.*", "--partitions", "3") == (0, "", "")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": LOG})
    assert len(admin.list_topics(topic_name, timeout=10).topics[topic_name].partitions) == 3
