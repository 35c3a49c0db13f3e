"""ElectLeaders, Alter/ListPartitionReassignments and DescribeQuorum, answered as a single-node
KRaft broker+controller answers them."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    AlterPartitionReassignmentsRequest,
    DescribeQuorumRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from protocol.primitives import ZERO_UUID

from .admin_wire import create_topic

Reassign = AlterPartitionReassignmentsRequest


def unique(stem: str = "sn") -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elect_leaders_is_never_needed_and_unknown_partitions_are_refused(wire, version):
    topic = unique()
    create_topic(wire, topic, partitions=2)
    response = wire.request(ApiKey.ELECT_LEADERS, version, ElectLeadersRequest(
        election_type=0, timeout_ms=1000, topic_partitions=[
            ElectLeadersRequest.TopicPartitions(topic, [0, 1, 5]),
            ElectLeadersRequest.TopicPartitions("no-such-topic", [0])]))
    assert response.error_code == 0
    results = {(r.topic, p.partition_id): (p.error_code, p.error_message)
               for r in response.replica_election_results for p in r.partition_result}
    not_needed = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    assert results == {(topic, 0): not_needed, (topic, 1): not_needed,
                       (topic, 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-5"),
                       ("no-such-topic", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as no-such-topic")}


def test_electing_every_partition_reports_none_and_unclean_is_not_needed_either(wire):
    topic = unique()
    create_topic(wire, topic)
    everything = wire.request(ApiKey.ELECT_LEADERS, 2, ElectLeadersRequest(election_type=0, topic_partitions=None))
    assert topic in {r.topic for r in everything.replica_election_results}
    assert all(not r.partition_result for r in everything.replica_election_results)
    unclean = wire.request(ApiKey.ELECT_LEADERS, 2, ElectLeadersRequest(
        election_type=1, topic_partitions=[ElectLeadersRequest.TopicPartitions(topic, [0])]))
    assert unclean.replica_election_results[0].partition_result[0].error_code == ErrorCode.ELECTION_NOT_NEEDED
    bad = wire.request(ApiKey.ELECT_LEADERS, 2, ElectLeadersRequest(
        election_type=7, topic_partitions=[ElectLeadersRequest.TopicPartitions(topic, [0])]))
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert bad.replica_election_results[0].partition_result[0].error_message == "Unknown election type 7"


def test_reassignments_to_this_node_succeed_others_are_refused_and_none_are_ever_listed(wire):
    topic = unique()
    create_topic(wire, topic, partitions=2)
    response = wire.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, Reassign(timeout_ms=1000, topics=[
        Reassign.ReassignableTopic(topic, [Reassign.ReassignablePartition(0, [0]),
                                           Reassign.ReassignablePartition(1, [0, 1]),
                                           Reassign.ReassignablePartition(2, [0])]),
        Reassign.ReassignableTopic(unique("gone"), [Reassign.ReassignablePartition(0, [0])]),
        Reassign.ReassignableTopic(topic, [Reassign.ReassignablePartition(0, None),
                                           Reassign.ReassignablePartition(1, []),
                                           Reassign.ReassignablePartition(1, [0, 0])])]))
    assert (response.error_code, response.error_message) == (0, None)
    results = [[(p.partition_index, p.error_code, p.error_message) for p in t.partitions] for t in response.responses]
    assert results[0] == [
        (0, 0, None),
        (1, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes broker 1, but no such broker is registered."),
        (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:2.")]
    assert results[1][0][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert results[2] == [
        (0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
        (1, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."),
        (1, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
         "The manual partition assignment includes the broker 0 more than once.")]
    for topics in (None, [ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(topic, [0, 1])]):
        listed = wire.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0,
                              ListPartitionReassignmentsRequest(timeout_ms=1000, topics=topics))
        assert (listed.error_code, listed.error_message, listed.topics) == (0, None, [])


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_shows_this_node_as_the_only_voter_and_leader(shared_server, wire, version):
    request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        "__cluster_metadata", [DescribeQuorumRequest.PartitionData(0)])])
    response = wire.request(ApiKey.DESCRIBE_QUORUM, version, request)
    assert response.error_code == 0
    [topic] = response.topics
    [partition] = topic.partitions
    assert (topic.topic_name, partition.partition_index, partition.error_code, partition.leader_id) == (
        "__cluster_metadata", 0, 0, 0)
    assert partition.leader_epoch >= 1 and partition.observers == []
    [voter] = partition.current_voters
    assert voter.replica_id == 0 and voter.log_end_offset == partition.high_watermark
    if version >= 1:
        assert voter.last_fetch_timestamp == voter.last_caught_up_timestamp > 0
    if version >= 2:
        assert voter.replica_directory_id == ZERO_UUID
        [node] = response.nodes
        assert (node.node_id, [(listener.host, listener.port) for listener in node.listeners]) == (
            0, [(shared_server.host, shared_server.port)])


def test_describe_quorum_of_another_partition_is_unknown(wire):
    response = wire.request(ApiKey.DESCRIBE_QUORUM, 2, DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        "__cluster_metadata", [DescribeQuorumRequest.PartitionData(1)])]))
    [partition] = response.topics[0].partitions
    assert (partition.partition_index, partition.error_code) == (1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
