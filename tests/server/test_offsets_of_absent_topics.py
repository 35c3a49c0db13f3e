"""Offsets of topics or partitions that do not exist (docs/spec/offsets.md#commit-checks): OffsetCommit,
OffsetDelete and TxnOffsetCommit answer UNKNOWN_TOPIC_OR_PARTITION for them before the group (or the transaction)
is consulted, as KafkaApis does with its metadata cache; the other partitions go on. Nothing is stored
for them, and a commit naming only such partitions creates no group. OffsetFetch of them answers no
offset (-1, NONE), as Kafka does. (Compared with Apache Kafka 4.4 in tests/differential.)"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    InitProducerIdRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
)
from tests.server.admin_wire import ensure_topic

Topic, Partition = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def commit(group: str, topics: dict[str, list[int]], generation: int = -1, member_id: str = "",
           instance: str | None = None) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
                               group_instance_id=instance, topics=[
                                   Topic(name=name, partitions=[Partition(partition_index=p, committed_offset=10 + p)
                                                                for p in partitions])
                                   for name, partitions in topics.items()])


def codes(response) -> list[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions]


def committed(wire, group: str) -> dict[tuple[str, int], int]:  # type: ignore[no-untyped-def]
    response = wire.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id=group, topics=None))
    return {(t.name, p.partition_index): p.committed_offset for t in response.topics for p in t.partitions}


def listed(wire) -> set[str]:  # type: ignore[no-untyped-def]
    return {g.group_id for g in wire.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).groups}


def test_a_commit_naming_only_absent_topics_is_refused_before_the_group_exists(wire) -> None:
    ensure_topic(wire, "present-2", partitions=2)
    # A generation and an instance id that the group would refuse (it does not exist): not consulted.
    response = wire.request(ApiKey.OFFSET_COMMIT, 9, commit("absent-only", {"absent": [0, 1], "present-2": [2]},
                                                            generation=4, member_id="m", instance="i"))
    assert codes(response) == [("absent", 0, UNKNOWN), ("absent", 1, UNKNOWN), ("present-2", 2, UNKNOWN)]
    assert "absent-only" not in listed(wire)


def test_absent_partitions_are_answered_first_and_the_others_committed(wire) -> None:
    ensure_topic(wire, "present-2", partitions=2)
    response = wire.request(ApiKey.OFFSET_COMMIT, 8, commit("mixed", {"present-2": [1, 5, 0], "absent": [3]}))
    # Kafka's OffsetCommitResponse.Builder: the screened partitions first, the group's answer merged into
    # the topics already there.
    assert codes(response) == [("present-2", 5, UNKNOWN), ("present-2", 1, 0), ("present-2", 0, 0),
                               ("absent", 3, UNKNOWN)]
    assert committed(wire, "mixed") == {("present-2", 0): 10, ("present-2", 1): 11}
    fetched = wire.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id="mixed", topics=[
        OffsetFetchRequest.OffsetFetchRequestTopic(name="absent", partition_indexes=[3])]))
    assert [(p.committed_offset, p.error_code) for t in fetched.topics for p in t.partitions] == [(-1, 0)]


def test_offset_delete_screens_absent_topics_but_still_asks_the_group(wire) -> None:
    ensure_topic(wire, "present-2", partitions=2)
    assert codes(wire.request(ApiKey.OFFSET_COMMIT, 8, commit("deleting", {"present-2": [0, 1]}))) == [
        ("present-2", 0, 0), ("present-2", 1, 0)]
    Deleted = OffsetDeleteRequest.OffsetDeleteRequestTopic
    DeletedPartition = OffsetDeleteRequest.OffsetDeleteRequestPartition
    response = wire.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="deleting", topics=[
        Deleted(name="present-2", partitions=[DeletedPartition(partition_index=p) for p in (0, 4)]),
        Deleted(name="absent", partitions=[DeletedPartition(partition_index=0)])]))
    assert response.error_code == ErrorCode.NONE
    assert codes(response) == [("present-2", 4, UNKNOWN), ("present-2", 0, 0), ("absent", 0, UNKNOWN)]
    assert committed(wire, "deleting") == {("present-2", 1): 11}
    # Only absent topics: the group is still asked, and its own error (no such group) is the answer.
    nobody = wire.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="no-such-group", topics=[
        Deleted(name="absent", partitions=[DeletedPartition(partition_index=0)])]))
    assert (nobody.error_code, nobody.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])


def test_a_txn_offset_commit_of_absent_topics_only_is_answered_without_the_transaction(wire) -> None:
    producer = wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id="absent-txn", transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
    assert producer.error_code == ErrorCode.NONE
    TxnTopic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    TxnPartition = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition
    # No AddOffsetsToTxn first: the transaction would refuse it, but it is never asked.
    response = wire.request(ApiKey.TXN_OFFSET_COMMIT, 3, TxnOffsetCommitRequest(
        transactional_id="absent-txn", group_id="absent-txn-group", producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch, generation_id=-1, member_id="", topics=[
            TxnTopic(name="absent", partitions=[TxnPartition(partition_index=0, committed_offset=1)])]))
    assert codes(response) == [("absent", 0, UNKNOWN)]
