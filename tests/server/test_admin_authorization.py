"""The topic admin APIs with the authorizer on: DELETE / ALTER_CONFIGS / DESCRIBE / ALTER on the topic and
DESCRIBE / ALTER on the cluster, refused with Kafka's errors until an ACL allows them."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeLogDirsRequest,
    DescribeQuorumRequest,
    DescribeTopicPartitionsRequest,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)

from .test_authorization import CHECKS, ME, _acls, _wait_until

DR = DeleteRecordsRequest
IAC = IncrementalAlterConfigsRequest
DTP = DescribeTopicPartitionsRequest


def _create(wire, name: str) -> int:
    return wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name, 1, 1, [], [])])).topics[0].error_code


def _delete_records(wire, topic: str) -> tuple[int, int]:
    response = wire.request(ApiKey.DELETE_RECORDS, 2, DR(timeout_ms=1000, topics=[
        DR.DeleteRecordsTopic(topic, [DR.DeleteRecordsPartition(0, 0)])]))
    p = response.topics[0].partitions[0]
    return p.error_code, p.low_watermark


def _alter(wire, topic: str) -> int:
    return wire.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IAC(resources=[IAC.AlterConfigsResource(
        2, topic, [IAC.AlterableConfig("retention.ms", 0, "1000")])], validate_only=False)).responses[0].error_code


def _grow(wire, topic: str, count: int) -> int:
    """CreatePartitions needs ALTER on the topic (Kafka's ControllerApis.handleCreatePartitions)."""
    grow = CreatePartitionsRequest.CreatePartitionsTopic(name=topic, count=count, assignments=None)
    return wire.request(ApiKey.CREATE_PARTITIONS, 3, CreatePartitionsRequest(
        topics=[grow], timeout_ms=1000, validate_only=False)).results[0].error_code


def test_topic_admin_apis_need_their_acls(server_factory, connect):
    server = server_factory(*CHECKS)
    wire = connect(server)
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Create", "--cluster")
    _wait_until(lambda: _create(wire, "open") == ErrorCode.NONE)
    assert _create(wire, "closed") == ErrorCode.NONE

    assert _delete_records(wire, "open") == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
    assert _alter(wire, "open") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _grow(wire, "open", 2) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    logdirs = wire.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None))
    assert (logdirs.error_code, logdirs.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    elect = wire.request(ApiKey.ELECT_LEADERS, 2, ElectLeadersRequest(
        election_type=0, topic_partitions=[ElectLeadersRequest.TopicPartitions("open", [0])]))
    assert elect.error_code == elect.replica_election_results[0].partition_result[0].error_code == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    quorum = wire.request(ApiKey.DESCRIBE_QUORUM, 2, DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        "__cluster_metadata", [DescribeQuorumRequest.PartitionData(0)])]))
    assert quorum.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    listed = wire.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, ListPartitionReassignmentsRequest(topics=None))
    assert listed.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    _acls(server, "--add", "--allow-principal", ME, "--operation", "Delete", "--operation", "AlterConfigs",
          "--operation", "Describe", "--operation", "Alter", "--topic", "open")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Describe", "--operation", "Alter", "--cluster")
    _wait_until(lambda: _delete_records(wire, "open") == (ErrorCode.NONE, 0))
    assert _delete_records(wire, "closed") == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
    assert _alter(wire, "open") == ErrorCode.NONE
    assert _alter(wire, "closed") == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert _grow(wire, "open", 2) == ErrorCode.NONE
    assert _grow(wire, "closed", 2) == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # ALTER on the cluster is not enough
    assert wire.request(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None)).error_code == 0
    described = wire.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, DTP(topics=[DTP.TopicRequest("open"),
                                                                              DTP.TopicRequest("closed")]))
    assert [(t.name, t.error_code) for t in described.topics] == [
        ("open", ErrorCode.NONE), ("closed", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    everything = wire.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, DTP(topics=[]))
    assert [t.name for t in everything.topics] == ["open"]  # all topics: only those it may describe
