"""Metadata (key 3), v0–12.

This node is the only broker, leader of every partition (leader epoch 0,
replicas and ISR = this node). v1 controller id, rack, internal flag, null
topics = all (v0: an empty list means all; v0 lists no internal topics, as it
cannot flag them); v2 cluster id; v4 allow_auto_topic_creation (earlier
versions always may, if `auto.create.topics.enable`); v5 offline replicas; v7
leader epoch; v8 authorized operations (INT32_MIN unless asked for; with no
authorizer every supported operation); v9 flexible; v10 topic ids; v11 drops
cluster authorized operations; v12 lookup by topic id (null name).

Unknown topics: UNKNOWN_TOPIC_OR_PARTITION, or created with `num.partitions`
when auto-creation applies; illegal names: INVALID_TOPIC_EXCEPTION; unknown
ids: UNKNOWN_TOPIC_ID.
"""

from __future__ import annotations

import uuid

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster, permits_topic
from coordinator.server.apis._authorized import CLUSTER_OPERATIONS, OMITTED, TOPIC_OPERATIONS, authorized_operations
from coordinator.server.broker import Broker
from coordinator.server.data_plane import SINGLE_NODE_LEADER_EPOCH
from coordinator.server.registry import HandlerError, RequestContext, api
from coordinator.topics import OFFSETS_TOPIC, Topic, TopicError, validate_topic_name
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import MetadataResponse
from protocol.primitives import ZERO_UUID

log = structlog.get_logger()

Partition = MetadataResponse.MetadataResponsePartition
TopicEntry = MetadataResponse.MetadataResponseTopic


def topic_entry(broker: Broker, topic: Topic, topic_operations: int = OMITTED) -> TopicEntry:
    node = broker.node_id
    partitions = [Partition(error_code=0, partition_index=i, leader_id=node, leader_epoch=SINGLE_NODE_LEADER_EPOCH,
                            replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
                  for i in range(topic.partitions)]
    if broker.cluster is not None and not topic.internal:
        set_leaders(broker, topic, partitions)
    if broker.cluster is not None and topic.name == OFFSETS_TOPIC:  # a cluster: each shard's lease holder leads it
        for entry in partitions:
            owner = broker.cluster.owner_of(entry.partition_index)
            entry.leader_id = owner.node_id if owner is not None else -1
            entry.replica_nodes = entry.isr_nodes = [entry.leader_id] if owner is not None else []
            if owner is None:
                entry.error_code = int(ErrorCode.LEADER_NOT_AVAILABLE)
    return TopicEntry(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal,
                      partitions=partitions, topic_authorized_operations=topic_operations)


def set_leaders(broker: Broker, topic: Topic, partitions: list) -> None:  # type: ignore[type-arg]
    """A cluster: each partition's lease holder leads it, at the lease's epoch (Metadata and
    DescribeTopicPartitions entries; LEADER_NOT_AVAILABLE while no live node holds the lease)."""
    for entry in partitions:
        leader = broker.data.leader_of(topic.name, entry.partition_index)
        entry.leader_id, entry.leader_epoch = leader if leader is not None else (-1, -1)
        entry.replica_nodes = entry.isr_nodes = [entry.leader_id] if leader is not None else []
        if leader is None:
            entry.error_code = int(ErrorCode.LEADER_NOT_AVAILABLE)


def _error_entry(code: ErrorCode, name: str | None, topic_id: uuid.UUID = ZERO_UUID) -> TopicEntry:
    return TopicEntry(error_code=int(code), name=name, topic_id=topic_id, is_internal=False, partitions=[],
                      topic_authorized_operations=OMITTED)


def _lookup(broker: Broker, name: str, may_create: bool, topic_operations: int, client_id: str | None) -> TopicEntry:
    topic = broker.topics.get(name)
    if topic is not None:
        return topic_entry(broker, topic, topic_operations)
    try:
        validate_topic_name(name)
    except TopicError:
        return _error_entry(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    if not may_create:
        return _error_entry(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    topic = broker.topics.create(name, broker.config["num.partitions"])
    log.info("topic_auto_created", topic=name, partitions=topic.partitions, topic_id=str(topic.topic_id),
             client_id=client_id)
    return topic_entry(broker, topic, topic_operations)


def _authorized_lookup(broker: Broker, ctx: RequestContext, name: str, may_create: bool,
                       topic_operations: int) -> TopicEntry:
    """A topic asked for by name: TOPIC_AUTHORIZATION_FAILED unless the principal may describe it
    (whether it exists or not, as Kafka); auto-created only with CREATE on the cluster or the topic."""
    if not permits_topic(broker, ctx, Operation.DESCRIBE, name):
        return _error_entry(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name)
    may_create = may_create and (permits_cluster(broker, ctx, Operation.CREATE)
                                 or permits_topic(broker, ctx, Operation.CREATE, name))
    return _lookup(broker, name, may_create, topic_operations, ctx.client_id)


def _by_id(broker: Broker, ctx: RequestContext, topic_id: uuid.UUID, topic_operations: int) -> TopicEntry:
    topic = broker.topics.by_id(topic_id)
    if topic is None:
        return _error_entry(ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id)
    if not permits_topic(broker, ctx, Operation.DESCRIBE, topic.name):
        return _error_entry(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, topic_id)
    return topic_entry(broker, topic, topic_operations)


def metadata_error(request, code: ErrorCode, version: int) -> MetadataResponse:  # type: ignore[no-untyped-def]
    """Every topic asked for carries `code` (Metadata has no top-level error code). Before v12 a
    response topic must have a name: one asked for by id only is answered with ""."""
    def name(t) -> str | None:  # type: ignore[no-untyped-def]
        return t.name if t.name is not None or version >= 12 else ""

    return MetadataResponse(topics=[_error_entry(code, name(t), t.topic_id) for t in request.topics or []])


@api(ApiKey.METADATA, versions=(0, 12), error_response=metadata_error)
def metadata(broker: Broker, request, ctx: RequestContext) -> MetadataResponse:  # type: ignore[no-untyped-def]
    version = ctx.api_version
    topic_operations = authorized_operations(request.include_topic_authorized_operations, TOPIC_OPERATIONS)
    all_topics = request.topics is None or (version == 0 and not request.topics)
    if all_topics:  # with an authorizer, only the topics this principal may describe
        entries = [topic_entry(broker, t, topic_operations) for t in broker.topics
                   if (not t.internal or version >= 1) and permits_topic(broker, ctx, Operation.DESCRIBE, t.name)]
    else:
        # As Kafka: topic ids (and so topics without a name) are for v12+ only.
        if version < 12 and any(t.name is None or t.topic_id != ZERO_UUID for t in request.topics):
            raise HandlerError(ErrorCode.INVALID_REQUEST)
        may_create = broker.config["auto.create.topics.enable"] and (version < 4 or request.allow_auto_topic_creation)
        # Looked up by id when it carries one (Kafka: a non-zero topic id wins). The Java consumer, subscribed
        # to a server-side regex, asks for its assigned topics by id with the name "", not null.
        entries = [_by_id(broker, ctx, wanted.topic_id, topic_operations)
                   if wanted.name is None or (version >= 12 and wanted.topic_id != ZERO_UUID)
                   else _authorized_lookup(broker, ctx, wanted.name, may_create, topic_operations)
                   for wanted in request.topics]
    advertised = broker.advertised_for(ctx.listener)  # the listener the client reached us on
    brokers = [MetadataResponse.MetadataResponseBroker(broker.node_id, advertised.host, advertised.port, None)]
    if broker.cluster is not None:  # a cluster: every live node (this one as reached on this listener)
        brokers += [MetadataResponse.MetadataResponseBroker(n.node_id, n.host, n.port, None)
                    for n in broker.cluster.live_nodes() if n.node_id != broker.node_id]
    return MetadataResponse(
        brokers=brokers,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        topics=entries,
        cluster_authorized_operations=authorized_operations(request.include_cluster_authorized_operations,
                                                            CLUSTER_OPERATIONS),
    )
