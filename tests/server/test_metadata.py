"""Metadata over the wire: this node as the only broker, auto-creation, name checks, topic ids."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import MetadataRequest
from protocol.primitives import ZERO_UUID

OMITTED = -(2**31)
Wanted = MetadataRequest.MetadataRequestTopic


def unique(stem: str = "t") -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def ask(wire, version: int, *names: str, allow_auto: bool = True, **flags) -> object:
    request = MetadataRequest(topics=[Wanted(ZERO_UUID, n) for n in names], allow_auto_topic_creation=allow_auto,
                              **flags)
    return wire.request(ApiKey.METADATA, version, request)


@pytest.mark.parametrize("version", range(0, 13))
def test_unknown_topic_is_auto_created_with_num_partitions_at_every_version(wire, shared_server, version):
    name = unique()
    response = ask(wire, version, name)
    assert [b.node_id for b in response.brokers] == [0]
    broker = response.brokers[0]
    assert (broker.host, broker.port) == (shared_server.host, shared_server.port)
    assert broker.rack is None
    [topic] = response.topics
    assert (topic.name, topic.error_code) == (name, ErrorCode.NONE)
    assert [(p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in topic.partitions] == [
        (0, 0, [0], [0])]
    if version >= 1:
        assert response.controller_id == 0 and topic.is_internal is False
    if version >= 2:
        assert response.cluster_id is not None and len(response.cluster_id) >= 22
    if version >= 7:
        assert topic.partitions[0].leader_epoch == 0
    if version >= 8:
        assert topic.topic_authorized_operations == OMITTED
    if version >= 10:
        assert topic.topic_id != ZERO_UUID


def test_v4_without_allow_auto_topic_creation_answers_unknown_topic(wire):
    name = unique()
    [topic] = ask(wire, 4, name, allow_auto=False).topics
    assert (topic.name, topic.error_code, topic.partitions) == (name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    # ...and did not create it behind the client's back.
    [again] = ask(wire, 12, name, allow_auto=False).topics
    assert again.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_auto_create_disabled_by_setting_applies_to_old_versions_too(server_factory, connect):
    srv = server_factory("auto.create.topics.enable=false")
    wire = connect(srv)
    for version in (0, 3, 12):
        [topic] = ask(wire, version, unique()).topics
        assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_auto_created_topics_use_num_partitions(server_factory, connect):
    srv = server_factory("num.partitions=3", "node.id=5")
    response = ask(connect(srv), 9, unique())
    [topic] = response.topics
    assert [(p.partition_index, p.leader_id, p.isr_nodes) for p in topic.partitions] == [
        (0, 5, [5]), (1, 5, [5]), (2, 5, [5])]
    assert response.controller_id == 5


@pytest.mark.parametrize("name", ["bad name", "a/b", ".", "..", "x" * 250, "ü"])
def test_illegal_topic_names_are_invalid_topic_exception(wire, name):
    [topic] = ask(wire, 9, name).topics
    assert (topic.name, topic.error_code) == (name, ErrorCode.INVALID_TOPIC_EXCEPTION)


def test_longest_legal_topic_name_is_created(wire):
    name = ("n" + uuid.uuid4().hex)[:20] + "._-" + "x" * 226
    assert len(name) == 249
    [topic] = ask(wire, 9, name).topics
    assert topic.error_code == ErrorCode.NONE


def test_null_topics_lists_every_topic_including_internal(wire):
    name = unique()
    ask(wire, 9, name)
    response = wire.request(ApiKey.METADATA, 9, MetadataRequest(topics=None))
    by_name = {t.name: t for t in response.topics}
    assert by_name[name].is_internal is False
    assert by_name["__consumer_offsets"].is_internal is True
    assert len(by_name["__consumer_offsets"].partitions) == 50


def test_v0_empty_topic_list_means_all_topics(wire):
    name = unique()
    ask(wire, 0, name)
    response = wire.request(ApiKey.METADATA, 0, MetadataRequest(topics=[]))
    assert name in {t.name for t in response.topics}


def test_v1_empty_topic_list_means_no_topics(wire):
    assert wire.request(ApiKey.METADATA, 1, MetadataRequest(topics=[])).topics == []


def test_v12_looks_topics_up_by_id(wire):
    name = unique()
    [created] = ask(wire, 12, name).topics
    by_id = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[Wanted(created.topic_id, None)]))
    assert [(t.name, t.topic_id, t.error_code) for t in by_id.topics] == [(name, created.topic_id, 0)]
    missing = uuid.uuid4()
    unknown = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[Wanted(missing, None)]))
    assert [(t.topic_id, t.error_code) for t in unknown.topics] == [(missing, ErrorCode.UNKNOWN_TOPIC_ID)]
    # The Java consumer subscribed to a server-side regex sends its assigned topic ids with the name "".
    by_id_empty_name = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[Wanted(created.topic_id, "")]))
    assert [(t.name, t.topic_id, t.error_code) for t in by_id_empty_name.topics] == [(name, created.topic_id, 0)]


def test_authorized_operations_are_given_when_asked_for(wire):
    response = ask(wire, 10, unique(), include_topic_authorized_operations=True,
                   include_cluster_authorized_operations=True)
    # Without an authorizer every supported topic/cluster operation is allowed (Kafka's AclEntry).
    assert response.topics[0].topic_authorized_operations == 3576
    assert response.cluster_authorized_operations == 8096


def test_topic_ids_are_stable_across_requests_and_restarts(server_factory, connect):
    srv = server_factory()
    name = unique()
    [first] = ask(connect(srv), 12, name).topics
    assert srv.stop() == 0
    again = server_factory(f"log.dirs={srv.data_dir}")
    [second] = ask(connect(again), 12, name, allow_auto=False).topics
    assert (second.error_code, second.topic_id) == (ErrorCode.NONE, first.topic_id)
