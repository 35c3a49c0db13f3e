"""Topics are shared through the database: a topic made on one node is in gc_topics when CreateTopics
answers, and a commit for it on another node is accepted at once, without waiting for that node's
next round (it re-reads gc_topics before answering UNKNOWN_TOPIC_OR_PARTITION). Partitions added and
topics deleted on one node reach the others too."""

from __future__ import annotations

import time
import uuid

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreatePartitionsRequest, DeleteTopicsRequest
from tests.cluster.conftest import query
from tests.cluster.wire import commit, commit_until_accepted, partitions_of
from tests.server.admin_wire import create_topic, produce
from tests.server.conftest import KafkaWire

# Rounds far apart: within this test no node learns a topic from its round.
SLOW_ROUNDS = ("cluster.lease.ms=30000", "cluster.lease.renew.ms=10000")


def test_a_commit_on_another_node_right_after_create_topics_is_accepted(cluster_factory) -> None:
    cluster = cluster_factory(3, *SLOW_ROUNDS, balanced=False)
    group, topic = f"shared-{uuid.uuid4().hex[:8]}", f"shared-{uuid.uuid4().hex[:8]}"
    owner = cluster.wait_owner(group)
    other = next(node for node in sorted(cluster.nodes) if node != owner)
    maker = KafkaWire(cluster.nodes[other].host, cluster.nodes[other].port)
    coordinator = KafkaWire(cluster.nodes[owner].host, cluster.nodes[owner].port)
    try:
        assert partitions_of(coordinator, topic) is None  # the owner does not know it yet
        create_topic(maker, topic, 2)
        assert query(cluster.url, "SELECT partitions FROM gc_topics WHERE name = $1", topic) == [{"partitions": 2}]
        commit_until_accepted(coordinator, group, topic, 5)  # retried only while the shard loads
        assert partitions_of(coordinator, topic) == 2
        # A topic no node made is still refused, after the owner looked in the database.
        assert commit(coordinator, group, f"absent-{uuid.uuid4().hex[:8]}", 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        maker.close()
        coordinator.close()


LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")


def wait_for(condition, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def test_create_partitions_and_delete_topics_reach_every_node(cluster_factory) -> None:
    """Partitions added on one node are known, led and writable on all; a topic deleted on one node is
    gone from all, its batches and leases with it."""
    cluster = cluster_factory(3, *LEASE)
    topic = f"grown-{uuid.uuid4().hex[:8]}"
    wires = {i: KafkaWire(node.host, node.port) for i, node in cluster.nodes.items()}
    try:
        create_topic(wires[1], topic, 1)
        wait_for(lambda: all(partitions_of(wire, topic) == 1 for wire in wires.values()))
        [result] = wires[2].request(ApiKey.CREATE_PARTITIONS, 3, CreatePartitionsRequest(
            topics=[CreatePartitionsRequest.CreatePartitionsTopic(topic, 3, None)], timeout_ms=5000)).results
        assert result.error_code == ErrorCode.NONE
        wait_for(lambda: all(partitions_of(wire, topic) == 3 for wire in wires.values()))
        leader = cluster.wait_leader(topic, 2)
        assert produce(wires[leader], topic, 2, 3, timestamp=int(time.time() * 1000)) == 0
        assert query(cluster.url, "SELECT count(*) AS n FROM gc_batches WHERE shard = $1", f"{topic}-2") == [{"n": 1}]

        [deleted] = wires[3].request(ApiKey.DELETE_TOPICS, 6, DeleteTopicsRequest(
            topics=[DeleteTopicsRequest.DeleteTopicState(name=topic)], timeout_ms=5000)).responses
        assert deleted.error_code == ErrorCode.NONE
        wait_for(lambda: all(partitions_of(wire, topic) is None for wire in wires.values()))
        wait_for(lambda: query(cluster.url, "SELECT count(*) AS n FROM gc_batches b, gc_leases l WHERE "
                                            "b.shard LIKE $1 OR l.shard LIKE $1", f"{topic}-%") == [{"n": 0}])
        time.sleep(1.0)  # a few rounds: no node publishes the topic again
        assert all(partitions_of(wire, topic) is None for wire in wires.values())
        assert query(cluster.url, "SELECT name FROM gc_topics WHERE name = $1", topic) == []
    finally:
        for wire in wires.values():
            wire.close()
