"""Topics are shared through the database: a topic made on one node is in gc_topics when CreateTopics
answers, and a commit for it on another node is accepted at once, without waiting for that node's
next round (it re-reads gc_topics before answering UNKNOWN_TOPIC_OR_PARTITION)."""

from __future__ import annotations

import uuid

from protocol.error_codes import ErrorCode
from tests.cluster.conftest import query
from tests.cluster.wire import commit, commit_until_accepted, partitions_of
from tests.server.admin_wire import create_topic
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
