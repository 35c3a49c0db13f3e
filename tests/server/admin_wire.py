"""Raw-protocol helpers shared by the admin API tests: create a topic, produce, fetch, list offsets."""

from __future__ import annotations

from typing import Any

from coordinator.log.batch import build_batch
from protocol.api_keys import ApiKey
from protocol.messages import CreateTopicsRequest, FetchRequest, ListOffsetsRequest, ProduceRequest

EARLIEST, LATEST = -2, -1
TOPIC_ALREADY_EXISTS = 36


def create_topic(wire: Any, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    entries = [CreateTopicsRequest.CreatableTopicConfig(k, v) for k, v in (configs or {}).items()]
    [result] = wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name, partitions, 1, [], entries)])).topics
    assert result.error_code == 0, result.error_message


def produce(wire: Any, topic: str, partition: int, records: int, timestamp: int = 1_000) -> int:
    """One batch of `records` records; its base offset."""
    batch = build_batch([(f"k{i}".encode(), f"v{i}".encode()) for i in range(records)], timestamp=timestamp)
    response = wire.request(ApiKey.PRODUCE, 9, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=batch)])]))
    [result] = response.responses[0].partition_responses
    assert result.error_code == 0
    return result.base_offset


def fetch(wire: Any, topic: str, partition: int, offset: int) -> Any:
    """The partition's result of a Fetch v11 (by name) at `offset`, without waiting."""
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                               topic=topic, partitions=[FetchRequest.FetchPartition(
                                   partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                                   log_start_offset=-1, partition_max_bytes=1 << 20)])],
                           forgotten_topics_data=[], rack_id="")
    return wire.request(ApiKey.FETCH, 11, request).responses[0].partitions[0]


def list_offset(wire: Any, topic: str, partition: int, timestamp: int) -> Any:
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=timestamp)])])
    return wire.request(ApiKey.LIST_OFFSETS, 7, request).topics[0].partitions[0]


def ensure_topic(wire: Any, name: str, partitions: int = 1) -> None:
    """Create the topic the test commits offsets to unless an earlier test on the shared server did
    (offsets of topics that do not exist are refused, as Kafka refuses them)."""
    [result] = wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name, partitions, 1, [], [])])).topics
    assert result.error_code in (0, TOPIC_ALREADY_EXISTS), result.error_message
