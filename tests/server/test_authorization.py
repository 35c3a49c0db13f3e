"""ACLs enforced on the wire: the errors Kafka answers, per partition and per group, and ACL changes
made with `groupcoord acls` taking effect on a running server.

Over PLAINTEXT every client is User:ANONYMOUS; the ACLs name that principal. (Tests with several
authenticated principals are in tests/clients/test_security.py.)
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.cli import main as groupcoord
from coordinator.log.batch import build_batch
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ProduceRequest,
)

ME = "User:ANONYMOUS"
CHECKS = ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "group.initial.rebalance.delay.ms=0"]


def _acls(server, *args: str) -> None:
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), *args]) == 0


def _join(wire, group: str) -> int:
    return wire.request(ApiKey.JOIN_GROUP, 5, JoinGroupRequest(
        group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])).error_code


def _commit(wire, group: str, *topics: str) -> dict[str, int]:
    response = wire.request(ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])
            for t in topics]))
    return {t.name: t.partitions[0].error_code for t in response.topics}


def _produce(wire, topic: str) -> int:
    response = wire.request(ApiKey.PRODUCE, 9, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=build_batch([(b"k", b"v")]))])]))
    return response.responses[0].partition_responses[0].error_code


def _wait_until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the server did not apply the ACL change"
        time.sleep(0.1)


def test_group_and_topic_acls_are_enforced_with_kafkas_errors(server_factory, connect):
    server = server_factory(*CHECKS)
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Create", "--cluster")
    _wait_until(lambda: admin.create_topics([NewTopic("t", 1, 1), NewTopic("secret", 1, 1)])["t"].exception(20)
                is None)
    wire = connect(server)
    assert _join(wire, "billing") == ErrorCode.GROUP_AUTHORIZATION_FAILED  # no ACL names it: closed
    assert _produce(wire, "t") == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    _acls(server, "--add", "--allow-principal", ME, "--consumer", "--producer", "--topic", "t", "--group", "billing")
    _wait_until(lambda: _join(wire, "billing") == ErrorCode.MEMBER_ID_REQUIRED)  # let in: the usual first answer
    assert _join(wire, "payroll") == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert _commit(wire, "billing", "t", "secret") == {"t": ErrorCode.NONE,
                                                       "secret": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert _commit(wire, "payroll", "t") == {"t": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    assert _produce(wire, "t") == ErrorCode.NONE
    assert _produce(wire, "secret") == ErrorCode.TOPIC_AUTHORIZATION_FAILED

    fetched = wire.request(ApiKey.OFFSET_FETCH, 8, OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=[0]) for t in ("t", "secret")])
        for g in ("billing", "payroll")]))
    by_group = {g.group_id: g for g in fetched.groups}
    assert by_group["payroll"].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert {t.name: (t.partitions[0].committed_offset, t.partitions[0].error_code)
            for t in by_group["billing"].topics} == {"t": (5, 0), "secret": (-1, ErrorCode.TOPIC_AUTHORIZATION_FAILED)}

    described = wire.request(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["billing", "payroll"]))
    assert {g.group_id: g.error_code for g in described.groups} == {
        "billing": ErrorCode.NONE, "payroll": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    _commit(wire, "payroll", "t")
    listed = wire.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=[]))
    assert [g.group_id for g in listed.groups] == ["billing"]  # only what this principal may describe

    # A DENY added later wins over the ALLOW, on the running server.
    _acls(server, "--add", "--deny-principal", ME, "--operation", "Read", "--group", "bill",
          "--resource-pattern-type", "prefixed")
    _wait_until(lambda: _join(wire, "billing") == ErrorCode.GROUP_AUTHORIZATION_FAILED)


def test_a_real_consumer_is_refused_a_group_it_may_not_read_while_it_consumes_one_it_may(server_factory):
    server = server_factory(*CHECKS, "super.users=User:admin")
    _acls(server, "--add", "--allow-principal", ME, "--consumer", "--producer", "--topic", "t", "--group", "billing")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Create", "--cluster")
    time.sleep(1.1)  # the server looks at the ACL file at most once a second
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)
    producer = Producer({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    for i in range(10):
        producer.produce("t", value=str(i))
    assert producer.flush(20) == 0

    def consume(group: str) -> tuple[int, list[KafkaError]]:
        consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False, "logger": logging.getLogger("librdkafka")})
        consumer.subscribe(["t"])
        got, errors = 0, []
        deadline = time.monotonic() + 20
        while got < 10 and not errors and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                errors.append(msg.error())
            else:
                got += 1
        if got:
            consumer.commit(asynchronous=False)
        consumer.close()
        return got, errors

    assert consume("billing") == (10, [])
    got, errors = consume("payroll")
    assert got == 0 and [e.code() for e in errors] == [KafkaError.GROUP_AUTHORIZATION_FAILED], errors


def test_metadata_and_find_coordinator_show_only_what_the_principal_may_describe(server_factory, connect):
    server = server_factory(*CHECKS, "auto.create.topics.enable=true")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Create", "--cluster")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    _wait_until(lambda: admin.create_topics([NewTopic("open", 1, 1)])["open"].exception(20) is None)
    admin.create_topics([NewTopic("hidden", 1, 1)])["hidden"].result(20)
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Describe", "--topic", "open", "--topic", "new-",
          "--resource-pattern-type", "prefixed")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Describe", "--group", "mine")
    wire = connect(server)

    def names(topics) -> dict[str, int]:
        response = wire.request(ApiKey.METADATA, 12, MetadataRequest(
            topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=True))
        return {t.name: t.error_code for t in response.topics}

    _wait_until(lambda: names(None) == {"open": 0})  # "hidden" is left out of the full listing
    assert names(["open", "hidden", "nowhere"]) == {"open": 0, "hidden": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                    "nowhere": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert names(["new-topic"]) == {"new-topic": 0}  # DESCRIBE by prefix and CREATE on the cluster: auto-created
    found = wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0,
                                                                           coordinator_keys=["mine", "theirs"]))
    assert {c.key: c.error_code for c in found.coordinators} == {"mine": 0,
                                                                 "theirs": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    old = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="theirs", key_type=0))
    assert old.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_transactional_id_and_idempotent_write_acls_are_enforced_as_kafka_does(server_factory, connect):
    """KafkaApis: WRITE on the TRANSACTIONAL_ID for InitProducerId, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
    and transactional Produce; DESCRIBE for FindCoordinator, DescribeTransactions, ListTransactions;
    IDEMPOTENT_WRITE on the cluster (or WRITE on a topic) for an idempotent InitProducerId."""
    from protocol.messages import (
        AddOffsetsToTxnRequest,
        DescribeTransactionsRequest,
        EndTxnRequest,
        InitProducerIdRequest,
        ListTransactionsRequest,
        TxnOffsetCommitRequest,
    )

    server = server_factory(*CHECKS)
    wire = connect(server)

    def init(tid: str | None):
        return wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))

    def find(tid: str) -> int:
        return wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(
            key_type=1, coordinator_keys=[tid])).coordinators[0].error_code

    denied = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert find("tx") == denied and init("tx").error_code == denied
    assert init(None).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    _acls(server, "--add", "--allow-principal", ME, "--producer", "--topic", "t", "--transactional-id", "tx")
    _wait_until(lambda: init("tx").error_code == ErrorCode.NONE)
    assert init(None).error_code == ErrorCode.NONE  # IdempotentWrite came with --producer
    assert find("tx") == ErrorCode.NONE and find("other") == denied and init("other").error_code == denied
    producer = init("tx")
    pid, epoch = producer.producer_id, producer.producer_epoch
    assert wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="billing")).error_code \
        == ErrorCode.GROUP_AUTHORIZATION_FAILED  # the id passes, the group does not
    assert wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id="other", producer_id=pid, producer_epoch=epoch, group_id="billing")).error_code == denied
    assert wire.request(ApiKey.END_TXN, 3, EndTxnRequest(
        transactional_id="other", producer_id=pid, producer_epoch=epoch, committed=True)).error_code == denied
    committed = wire.request(ApiKey.TXN_OFFSET_COMMIT, 3, TxnOffsetCommitRequest(
        transactional_id="other", group_id="billing", producer_id=pid, producer_epoch=epoch, topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name="t", partitions=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]))
    assert committed.topics[0].partitions[0].error_code == denied
    described = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(
        transactional_ids=["tx", "other"]))
    assert [(s.transactional_id, s.error_code) for s in described.transaction_states] == [
        ("tx", ErrorCode.NONE), ("other", denied)]
    # An id the principal may no longer describe leaves the list.
    _acls(server, "--add", "--allow-principal", ME, "--producer", "--transactional-id", "hidden")
    _wait_until(lambda: init("hidden").error_code == ErrorCode.NONE)
    listed = wire.request(ApiKey.LIST_TRANSACTIONS, 0, ListTransactionsRequest())
    assert sorted(s.transactional_id for s in listed.transaction_states) == ["hidden", "tx"]
    _acls(server, "--add", "--deny-principal", ME, "--operation", "Describe", "--transactional-id", "hidden")
    _wait_until(lambda: [s.transactional_id for s in wire.request(
        ApiKey.LIST_TRANSACTIONS, 0, ListTransactionsRequest()).transaction_states] == ["tx"])
