"""Admin round trip through confluent-kafka's AdminClient and kafka-python's KafkaAdminClient:
list, describe, alter offsets, delete offsets, delete the group, remove a static member — against
a group with a real static member and committed offsets, with Kafka's errors where Kafka has them."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.admin import MemberToRemove
from kafka.errors import NoError
from kafka.structs import OffsetAndMetadata

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

TOPIC, GROUP, INSTANCE = "admin-topic", "admin-group", "static-x"


def _error_name(exc: BaseException) -> str:
    return exc.args[0].name() if isinstance(exc, KafkaException) else type(exc).__name__


def test_admin_clients_list_describe_alter_delete_offsets_remove_static_member_and_delete_group(server_factory):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    config = {"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")}
    confluent = AdminClient(config)
    confluent.create_topics([NewTopic(TOPIC, num_partitions=3, replication_factor=1)])[TOPIC].result(20)
    producer = Producer(config)
    for i in range(9):
        producer.produce(TOPIC, value=b"m", partition=i % 3)
    assert producer.flush(20) == 0
    kp = KafkaAdminClient(bootstrap_servers=server.bootstrap)

    consumer = Consumer({**config, "group.id": GROUP, "group.instance.id": INSTANCE, "client.id": "admin-client",
                         "enable.auto.commit": False, "session.timeout.ms": 30_000})
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 3 and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert len(consumer.assignment()) == 3
        consumer.commit(offsets=[CTopicPartition(TOPIC, p, 3) for p in range(3)], asynchronous=False)

        # list and describe, both clients
        listed = confluent.list_consumer_groups().result(20)
        assert [(g.group_id, g.state.name) for g in listed.valid if g.group_id == GROUP] == [(GROUP, "STABLE")]
        assert {"group_id": GROUP, "protocol_type": "consumer", "group_state": "Stable",
                "group_type": "classic"} in kp.list_groups()
        described = confluent.describe_consumer_groups([GROUP])[GROUP].result(20)
        [member] = described.members
        assert (member.group_instance_id, member.client_id, member.member_id) == (INSTANCE, "admin-client",
                                                                                 consumer.memberid())
        assert "127.0.0.1" in member.host
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1, 2]
        kp_described = kp.describe_groups([GROUP])[GROUP]
        assert (kp_described["group_state"], kp_described["protocol_data"]) == ("Stable", "range")
        assert [m["group_instance_id"] for m in kp_described["members"]] == [INSTANCE]

        # a subscribed topic's offsets cannot be deleted; a group with members cannot be deleted
        errors = kp.delete_group_offsets(GROUP, [KTopicPartition(TOPIC, 0)])
        assert [e.__name__ for e in errors.values()] == ["GroupSubscribedToTopicError"]
        with pytest.raises(KafkaException) as non_empty:
            confluent.delete_consumer_groups([GROUP])[GROUP].result(20)
        assert _error_name(non_empty.value) == "NON_EMPTY_GROUP"
    finally:
        consumer.close()  # static: no LeaveGroup, the member keeps its seat

    # remove the static member by instance id (LeaveGroup v3+ batch form)
    removed = kp.remove_group_members(GROUP, [MemberToRemove(group_instance_id=INSTANCE)])
    assert list(removed.values()) == [NoError]
    assert confluent.describe_consumer_groups([GROUP])[GROUP].result(20).state.name == "EMPTY"

    # alter offsets (both clients) and read them back (both clients)
    request = ConsumerGroupTopicPartitions(GROUP, [CTopicPartition(TOPIC, 0, 1)])
    confluent.alter_consumer_group_offsets([request])[GROUP].result(20)
    kp.alter_group_offsets(GROUP, {KTopicPartition(TOPIC, 1): OffsetAndMetadata(2, "", -1)})
    fetched = confluent.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(20)
    assert sorted((tp.partition, tp.offset) for tp in fetched.topic_partitions) == [(0, 1), (1, 2), (2, 3)]
    offsets = kp.list_group_offsets({GROUP: None})[GROUP]
    assert {tp.partition: om.offset for tp, om in offsets.items()} == {0: 1, 1: 2, 2: 3}

    # delete one partition's offset now that nobody consumes the topic
    errors = kp.delete_group_offsets(GROUP, [KTopicPartition(TOPIC, 2)])
    assert list(errors.values()) == [NoError]
    assert {tp.partition for tp in kp.list_group_offsets({GROUP: None})[GROUP]} == {0, 1}

    # delete the group: gone from the list, its offsets with it
    confluent.delete_consumer_groups([GROUP])[GROUP].result(20)
    assert GROUP not in [g.group_id for g in confluent.list_consumer_groups().result(20).valid]
    assert kp.list_group_offsets({GROUP: None})[GROUP] == {}
    with pytest.raises(KafkaException) as missing:
        confluent.delete_consumer_groups([GROUP])[GROUP].result(20)
    assert _error_name(missing.value) == "GROUP_ID_NOT_FOUND"
    kp.close()
