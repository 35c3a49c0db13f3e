"""Metadata (key 3), v0–12.

This node is the only broker, leader of every partition. v1 controller id,
rack, internal flag, null topics = all (v0: an empty list means all); v2
cluster id; v4 allow_auto_topic_creation (earlier versions always may);
v5 offline replicas; v7 leader epoch; v8 authorized operations (not computed:
INT32_MIN, as Kafka when not requested); v10 topic ids, lookup by id; v12
nullable topic names.
"""

from __future__ import annotations

import structlog

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import MetadataResponse
from protocol.primitives import ZERO_UUID
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topics import Topic, TopicError, validate_topic_name

log = structlog.get_logger()

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
Partition = MetadataResponse.MetadataResponsePartition
TopicEntry = MetadataResponse.MetadataResponseTopic


def topic_entry(broker: Broker, topic: Topic) -> TopicEntry:
    node = broker.node_id
    partitions = [Partition(error_code=0, partition_index=i, leader_id=node, leader_epoch=0,
                            replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
                  for i in range(topic.partitions)]
    return TopicEntry(error_code=0, name=topic.name, topic_id=topic.topic_id, is_internal=topic.internal,
                      partitions=partitions, topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _error_entry(code: ErrorCode, name: str | None, topic_id=ZERO_UUID) -> TopicEntry:  # type: ignore[no-untyped-def]
    return TopicEntry(error_code=int(code), name=name, topic_id=topic_id, is_internal=False, partitions=[],
                      topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _lookup(broker: Broker, name: str, may_create: bool) -> TopicEntry:
    topic = broker.topics.get(name)
    if topic is not None:
        return topic_entry(broker, topic)
    try:
        validate_topic_name(name)
    except TopicError:
        return _error_entry(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    if not may_create:
        return _error_entry(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    topic = broker.topics.create(name, broker.config["num.partitions"])
    log.info("topic_auto_created", topic=name, partitions=topic.partitions, topic_id=str(topic.topic_id))
    return topic_entry(broker, topic)


@api(ApiKey.METADATA, versions=(0, 12))
def metadata(broker: Broker, request, ctx: RequestContext) -> MetadataResponse:  # type: ignore[no-untyped-def]
    version = ctx.api_version
    all_topics = request.topics is None or (version == 0 and not request.topics)
    may_create = broker.config["auto.create.topics.enable"] and (version < 4 or request.allow_auto_topic_creation)
    if all_topics:
        entries = [topic_entry(broker, t) for t in broker.topics if not t.internal or version >= 1]
    else:
        entries = []
        for wanted in request.topics:
            if wanted.name is None:
                topic = broker.topics.by_id(wanted.topic_id)
                entries.append(topic_entry(broker, topic) if topic is not None
                               else _error_entry(ErrorCode.UNKNOWN_TOPIC_ID, None, wanted.topic_id))
            else:
                entries.append(_lookup(broker, wanted.name, may_create))
    advertised = broker.advertised
    return MetadataResponse(
        brokers=[MetadataResponse.MetadataResponseBroker(broker.node_id, advertised.host, advertised.port, None)],
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        topics=entries,
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )
