"""DescribeTopicPartitions (with its cursor and partition limit) and DescribeLogDirs over the wire."""

from __future__ import annotations

import uuid

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeLogDirsRequest, DescribeTopicPartitionsRequest
from protocol.primitives import ZERO_UUID

from .admin_wire import create_topic, produce

Wanted = DescribeTopicPartitionsRequest.TopicRequest
Cursor = DescribeTopicPartitionsRequest.Cursor


def describe(wire, names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None):
    return wire.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, DescribeTopicPartitionsRequest(
        topics=[Wanted(n) for n in names], response_partition_limit=limit,
        cursor=Cursor(*cursor) if cursor else None))


def pages(wire, names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    """Every page a client paging with NextCursor sees: (topic, partition) per page."""
    seen, cursor = [], None
    while True:
        response = describe(wire, names, limit, cursor)
        seen.append([(t.name, p.partition_index) for t in response.topics for p in t.partitions])
        if response.next_cursor is None:
            return seen
        cursor = (response.next_cursor.topic_name, response.next_cursor.partition_index)


def test_partitions_are_described_with_this_node_as_leader_replica_and_isr(shared_server, wire):
    name = f"dtp-{uuid.uuid4().hex[:8]}"
    create_topic(wire, name, partitions=3)
    response = describe(wire, [name])
    [topic] = response.topics
    assert (topic.error_code, topic.name, topic.is_internal) == (0, name, False)
    assert topic.topic_id != ZERO_UUID and topic.topic_authorized_operations > 0
    assert [(p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.eligible_leader_replicas,
             p.offline_replicas) for p in topic.partitions] == [(i, 0, 0, [0], [0], [], []) for i in range(3)]
    assert response.next_cursor is None


def test_the_partition_limit_pages_through_topics_in_name_order_with_the_cursor(wire):
    stem = f"page-{uuid.uuid4().hex[:6]}"
    a, b, c = f"{stem}-a", f"{stem}-b", f"{stem}-c"
    create_topic(wire, b, partitions=3)
    create_topic(wire, a, partitions=2)
    create_topic(wire, c, partitions=1)
    assert pages(wire, [c, a, b], limit=2) == [[(a, 0), (a, 1)], [(b, 0), (b, 1)], [(b, 2), (c, 0)]]
    assert pages(wire, [c, a, b], limit=0) == [[(a, 0)], [(a, 1)], [(b, 0)], [(b, 1)], [(b, 2)], [(c, 0)]]
    # Exactly full after a topic: the cursor points at the next topic's partition 0.
    response = describe(wire, [a, b, c], limit=5)
    assert (response.next_cursor.topic_name, response.next_cursor.partition_index) == (c, 0)


def test_unknown_illegal_topics_and_bad_cursors(wire):
    missing = f"missing-{uuid.uuid4().hex[:6]}"
    response = describe(wire, [missing, "bad name"])
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION), (missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    name = f"cursor-{uuid.uuid4().hex[:6]}"
    create_topic(wire, name)
    for cursor in [("not-listed", 0), (name, -1)]:
        [topic] = describe(wire, [name], cursor=cursor).topics
        assert (topic.name, topic.error_code) == (name, ErrorCode.INVALID_REQUEST)


def test_an_empty_list_describes_every_topic_including_the_internal_one(wire):
    name = f"all-{uuid.uuid4().hex[:6]}"
    create_topic(wire, name, partitions=2)
    response = describe(wire, [], limit=100_000)
    by_name = {t.name: t for t in response.topics}
    assert len(by_name[name].partitions) == 2
    assert by_name["__consumer_offsets"].is_internal
    assert [t.name for t in response.topics] == sorted(by_name)


def test_describe_log_dirs_reports_the_directory_and_partition_sizes(shared_server, wire):
    name = f"logdirs-{uuid.uuid4().hex[:6]}"
    create_topic(wire, name, partitions=2)
    produce(wire, name, 0, 5)
    for version in range(5):
        topics = [DescribeLogDirsRequest.DescribableLogDirTopic(name, [0, 1, 7])]
        response = wire.request(ApiKey.DESCRIBE_LOG_DIRS, version, DescribeLogDirsRequest(topics=topics))
        [result] = response.results
        assert result.error_code == 0
        assert result.log_dir == str(shared_server.data_dir.resolve())
        [topic] = result.topics
        sizes = {p.partition_index: (p.partition_size, p.offset_lag, p.is_future_key) for p in topic.partitions}
        on_disk = sum(f.stat().st_size for f in (shared_server.data_dir / f"{name}-0").glob("*.log"))
        assert sizes == {0: (on_disk, 0, False), 1: (0, 0, False)} and on_disk > 0
        if version >= 4:
            assert result.total_bytes >= result.usable_bytes > 0
        else:
            assert result.total_bytes == result.usable_bytes == -1  # not on the wire below v4
    everything = wire.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None)).results[0].topics
    assert {name, "__consumer_offsets"} <= {t.name for t in everything}
