"""Share groups on a cluster: each share-partition kept by its topic partition's leader, its state in
PostgreSQL under that partition's lease (coordinator/cluster/share_state.py).

Raw ShareFetch/ShareAcknowledge (the wire codec, as tests/server/test_share_wire.py): a node that does
not lead a partition answers NOT_LEADER_OR_FOLLOWER naming the leader (and its endpoint); the
heartbeat stays with the group coordinator. A member acquires every record of a 2-partition topic,
accepts half of each partition and holds the rest; the leader of partition 0 is SIGKILLed: the new
leader loads the share-state, delivers the held records again (with the delivery count last written: an
acquisition writes none) and never the accepted ones, so that in the end every record was accepted
exactly once. A leader paused past its lease cannot acknowledge when it resumes.
"""

from __future__ import annotations

import signal
import time
import uuid
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest, ShareGroupHeartbeatRequest
from tests.cluster.conftest import query
from tests.cluster.wire import RETRIABLE, create_shared_topic
from tests.server.admin_wire import produce
from tests.server.conftest import KafkaWire

pytestmark = pytest.mark.clients

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")
RECORDS = 20
ACCEPT = 1
Fetch = ShareFetchRequest
Ack = ShareAcknowledgeRequest


def share_fetch(wire: KafkaWire, group: str, member: str, epoch: int, topic_id: uuid.UUID, partition: int) -> Any:
    return wire.request(ApiKey.SHARE_FETCH, 2, Fetch(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1, max_records=500,
        batch_size=500, topics=[Fetch.FetchTopic(topic_id, [Fetch.FetchPartition(partition_index=partition,
                                                                                 acknowledgement_batches=[])])],
        forgotten_topics_data=[]))


def accept(wire: KafkaWire, group: str, member: str, epoch: int, topic_id: uuid.UUID, partition: int,
           first: int, last: int) -> Any:
    response = wire.request(ApiKey.SHARE_ACKNOWLEDGE, 2, Ack(
        group_id=group, member_id=member, share_session_epoch=epoch, topics=[Ack.AcknowledgeTopic(topic_id, [
            Ack.AcknowledgePartition(partition, [Ack.AcknowledgementBatch(first, last, [ACCEPT])])])]))
    assert response.error_code == 0 and response.responses[0].partitions[0].error_code == 0
    return response


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in response.responses for p in t.partitions for a in p.acquired_records]


def partition_result(response: Any) -> Any:
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def test_share_partitions_follow_their_leader_and_survive_its_sigkill(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    topic = f"share-{uuid.uuid4().hex[:8]}"
    create_shared_topic(cluster, topic, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    wires = {i: KafkaWire(n.host, n.port) for i, n in cluster.nodes.items()}
    try:
        leaders = {p: cluster.wait_leader(topic, p) for p in range(2)}
        topic_id = _topic_id(wires[1], topic)

        # The heartbeat goes to the group coordinator; any other node says NOT_COORDINATOR.
        beat = join(cluster, wires, group, topic)
        other = next(i for i in wires if i != cluster.wait_owner(group))
        assert wires[other].request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, beat).error_code == ErrorCode.NOT_COORDINATOR

        # A share fetch for a partition this node does not lead: NOT_LEADER_OR_FOLLOWER, the leader named.
        elsewhere = next(i for i in wires if i != leaders[0])
        deadline = time.monotonic() + 10
        while True:  # until the node knows the topic (node 1 created it) and its lease round saw the leader
            refused = partition_result(share_fetch(wires[elsewhere], group, "member-1", 0, topic_id, 0))
            if refused.current_leader.leader_id != -1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert refused.current_leader.leader_id == leaders[0]
        endpoints = share_fetch(wires[elsewhere], group, "member-x", 0, topic_id, 0).node_endpoints
        assert [(e.node_id, e.port) for e in endpoints] == [(leaders[0], cluster.nodes[leaders[0]].port)]

        # Sessions on each leader (the share-partitions start at the empty log's end), then records.
        epochs: dict[int, int] = {}
        for p in range(2):
            assert acquired(share_fetch(wires[leaders[p]], group, f"m-{p}", 0, topic_id, p)) == []
            epochs[p] = 1
            produce(wires[leaders[p]], topic, p, RECORDS, timestamp=int(time.time() * 1000))  # not retention-old
        accepted: dict[int, list[int]] = {0: [], 1: []}
        half = RECORDS // 2
        for p in range(2):
            got = share_fetch(wires[leaders[p]], group, f"m-{p}", epochs[p], topic_id, p)
            assert acquired(got) == [(0, RECORDS - 1, 1)]
            accept(wires[leaders[p]], group, f"m-{p}", epochs[p] + 1, topic_id, p, 0, half - 1)
            epochs[p] += 2
            accepted[p] += range(half)
        rows = query(cluster.url, "SELECT shard FROM gc_batches WHERE shard LIKE '__share_group_state:%'")
        assert sorted(r["shard"] for r in rows) == [f"__share_group_state:{topic}-{p}" for p in range(2)]

        victim = leaders[0]
        cluster.signal(victim, signal.SIGKILL)
        wires.pop(victim).close()
        successor = cluster.wait_leader(topic, 0, not_node=victim)
        deadline = time.monotonic() + 20
        while True:  # the new leader loads the partition and its share-state (NOT_LEADER meanwhile)
            again = share_fetch(wires[successor], group, "m-after", 0, topic_id, 0)
            if partition_result(again).error_code == 0:
                break
            assert partition_result(again).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert time.monotonic() < deadline, "partition 0 not served after its leader's SIGKILL"
            time.sleep(0.2)
        # The accepted records never come back; the held ones do, with the delivery count last written:
        # an acquisition writes no state, as in Kafka (docs/spec/share-groups.md#durable-state), so the
        # delivery the SIGKILL cut short is not counted.
        assert acquired(again) == [(half, RECORDS - 1, 1)]
        accept(wires[successor], group, "m-after", 1, topic_id, 0, half, RECORDS - 1)
        accepted[0] += range(half, RECORDS)

        leader_1 = cluster.wait_leader(topic, 1, not_node=victim)
        if leader_1 == leaders[1]:  # untouched: the member's session carries on there
            accept(wires[leader_1], group, "m-1", epochs[1], topic_id, 1, half, RECORDS - 1)
        else:  # it moved with the victim: held records come back from the new leader
            deadline = time.monotonic() + 20
            while partition_result(moved := share_fetch(wires[leader_1], group, "m-1b", 0, topic_id, 1)).error_code:
                assert time.monotonic() < deadline, "partition 1 not served"
                time.sleep(0.2)
            assert acquired(moved) == [(half, RECORDS - 1, 1)]
            accept(wires[leader_1], group, "m-1b", 1, topic_id, 1, half, RECORDS - 1)
        accepted[1] += range(half, RECORDS)

        for p in range(2):
            assert sorted(accepted[p]) == list(range(RECORDS))  # every record, exactly once
            leader = cluster.wait_leader(topic, p, not_node=victim)
            assert acquired(share_fetch(wires[leader], group, "m-last", 0, topic_id, p)) == []  # none left
    finally:
        for wire in wires.values():
            wire.close()


def join(cluster: Any, wires: dict[int, KafkaWire], group: str, topic: str) -> ShareGroupHeartbeatRequest:
    """A member joins the share group through its coordinator, which initializes the share-partitions of
    the topic (a fetch of a share-partition never initialized fails, as in Kafka 4.4). The beat sent."""
    beat = ShareGroupHeartbeatRequest(group_id=group, member_id="member-1", member_epoch=0,
                                      subscribed_topic_names=[topic])
    deadline = time.monotonic() + 20
    while True:  # the shard's owner may still be loading it, or handing it to the node it settles on
        coordinator = cluster.wait_owner(group)
        code = wires[coordinator].request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, beat).error_code
        if code not in RETRIABLE or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert code == 0
    return beat


def _topic_id(wire: KafkaWire, topic: str) -> uuid.UUID:
    from protocol.messages import MetadataRequest

    response = wire.request(ApiKey.METADATA, 12, MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False))
    return response.topics[0].topic_id


def test_a_leader_paused_past_its_lease_cannot_acknowledge(cluster_factory) -> None:
    """SIGSTOP the leader holding acquired records past its lease: the successor delivers them again and
    takes their acceptance; the paused node, resumed, refuses the stale acknowledgement
    (NOT_LEADER_OR_FOLLOWER, the successor named) and nothing is delivered again after it."""
    cluster = cluster_factory(3, *LEASE)
    topic = f"share-{uuid.uuid4().hex[:8]}"
    create_shared_topic(cluster, topic, partitions=1)
    group = f"g-{uuid.uuid4().hex[:8]}"
    wires = {i: KafkaWire(n.host, n.port) for i, n in cluster.nodes.items()}
    paused = cluster.wait_leader(topic, 0)
    try:
        topic_id = _topic_id(wires[1], topic)
        join(cluster, wires, group, topic)
        assert acquired(share_fetch(wires[paused], group, "m", 0, topic_id, 0)) == []
        produce(wires[paused], topic, 0, RECORDS, timestamp=int(time.time() * 1000))
        assert acquired(share_fetch(wires[paused], group, "m", 1, topic_id, 0)) == [(0, RECORDS - 1, 1)]
        cluster.signal(paused, signal.SIGSTOP)
        successor = cluster.wait_leader(topic, 0, not_node=paused)
        deadline = time.monotonic() + 20
        while partition_result(again := share_fetch(wires[successor], group, "m2", 0, topic_id, 0)).error_code:
            assert time.monotonic() < deadline, "the partition is not served after its leader's pause"
            time.sleep(0.2)
        # back, count 1: as in Kafka, an acquisition alone writes no share-state (acknowledgements,
        # releases and lock expiries do)
        assert acquired(again) == [(0, RECORDS - 1, 1)]
        accept(wires[successor], group, "m2", 1, topic_id, 0, 0, RECORDS - 1)
        cluster.signal(paused, signal.SIGCONT)
        stale = wires[paused].request(ApiKey.SHARE_ACKNOWLEDGE, 2, Ack(
            group_id=group, member_id="m", share_session_epoch=2, topics=[Ack.AcknowledgeTopic(topic_id, [
                Ack.AcknowledgePartition(0, [Ack.AcknowledgementBatch(0, RECORDS - 1, [ACCEPT])])])]))
        assert stale.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        time.sleep(1.0)  # a few lease rounds of the resumed node
        assert cluster.wait_leader(topic, 0) == successor
        assert acquired(share_fetch(wires[successor], group, "m3", 0, topic_id, 0)) == []
    finally:
        if cluster.nodes[paused].proc is not None and cluster.nodes[paused].proc.poll() is None:
            cluster.signal(paused, signal.SIGCONT)
        for wire in wires.values():
            wire.close()
