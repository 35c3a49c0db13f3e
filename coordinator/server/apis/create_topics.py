"""CreateTopics (key 19), v2–7.

Checked in Kafka's order: a name given twice (INVALID_REQUEST, once per name,
none of them created), an illegal name (INVALID_TOPIC_EXCEPTION), an existing
topic (TOPIC_ALREADY_EXISTS), then partitions (INVALID_PARTITIONS unless ≥ 1
or -1 = `num.partitions`), replication factor (-1 or 1 on one node, else
INVALID_REPLICATION_FACTOR), manual assignments (partitions 0..n-1, each on
this node only, else INVALID_REPLICA_ASSIGNMENT; not together with a count:
INVALID_REQUEST) and configs (INVALID_CONFIG).

v1 validate_only (nothing created, the answer as if); v4 -1 defaults; v5
flexible, the topic's partitions, replication factor and configs in the
answer; v7 topic id. v0–1 are in Kafka's schema but not served (a client that
old gets UNSUPPORTED_VERSION per topic).
"""

from __future__ import annotations

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster, permits_topic
from coordinator.server.apis._routing import learn_shared_topics
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.topic_configs import TOPIC_SETTINGS, topic_default, validate_topic_config
from coordinator.topics import TopicError, validate_topic_name
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreateTopicsResponse
from protocol.primitives import ZERO_UUID

log = structlog.get_logger()
Result = CreateTopicsResponse.CreatableTopicResult
ConfigEntry = CreateTopicsResponse.CreatableTopicConfigs
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def _failure(name: str, code: ErrorCode, message: str | None) -> Result:
    return Result(name=name, topic_id=ZERO_UUID, error_code=int(code), error_message=message, num_partitions=-1,
                  replication_factor=-1, configs=None)


def create_topics_error(request, code: ErrorCode, version: int) -> CreateTopicsResponse:  # type: ignore[no-untyped-def]
    return CreateTopicsResponse(topics=[_failure(t.name, code, None) for t in request.topics])


def _problem(broker: Broker, wanted) -> tuple[ErrorCode, str] | None:  # type: ignore[no-untyped-def]
    """Why `wanted` cannot be created, or None."""
    try:
        validate_topic_name(wanted.name)
    except TopicError as exc:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)
    if wanted.name in broker.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{wanted.name}' already exists."
    if wanted.assignments:
        if wanted.num_partitions != -1 or wanted.replication_factor != -1:
            return ErrorCode.INVALID_REQUEST, ("Both numPartitions or replicationFactor and replicasAssignments "
                                               "were set. Both cannot be used at the same time.")
        indexes = sorted(a.partition_index for a in wanted.assignments)
        if indexes != list(range(len(indexes))):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions should be a consecutive 0-based integer sequence"
        for assignment in wanted.assignments:
            if assignment.broker_ids != [broker.node_id]:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                    f"partition {assignment.partition_index}: replicas {assignment.broker_ids}, but only broker "
                    f"{broker.node_id} exists")
    else:
        if wanted.num_partitions == 0 or wanted.num_partitions < -1:
            return ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        if wanted.replication_factor == 0 or wanted.replication_factor < -1:
            return ErrorCode.INVALID_REPLICATION_FACTOR, (
                "Replication factor must be larger than 0, or -1 to use the default value.")
        if wanted.replication_factor > 1:
            return ErrorCode.INVALID_REPLICATION_FACTOR, (
                f"Unable to replicate the partition {wanted.replication_factor} time(s): the target replication "
                f"factor of {wanted.replication_factor} cannot be reached because only 1 broker(s) are registered.")
    for entry in wanted.configs:
        message = validate_topic_config(entry.name, entry.value)
        if message:
            return ErrorCode.INVALID_CONFIG, message
    return None


def _config_entries(broker: Broker, configs: dict[str, str]) -> list[ConfigEntry]:
    entries = []
    for setting in TOPIC_SETTINGS.values():
        if setting.name in configs:
            value, source = configs[setting.name], DYNAMIC_TOPIC_CONFIG
        else:
            value = topic_default(broker.config, setting)
            set_on_broker = (setting.broker_default is not None
                             and broker.config.source(setting.broker_default) != "default")
            source = STATIC_BROKER_CONFIG if set_on_broker else DEFAULT_CONFIG
        entries.append(ConfigEntry(name=setting.name, value=value, read_only=False, config_source=source,
                                   is_sensitive=False))
    return entries


def may_create(broker: Broker, ctx: RequestContext, name: str) -> bool:
    """CREATE on the cluster, or on the topic (Kafka accepts either)."""
    return permits_cluster(broker, ctx, Operation.CREATE) or permits_topic(broker, ctx, Operation.CREATE, name)


@api(ApiKey.CREATE_TOPICS, versions=(2, 7), error_response=create_topics_error)
def create_topics(broker: Broker, request, ctx: RequestContext) -> Reply:  # type: ignore[no-untyped-def]
    names = [t.name for t in request.topics]
    duplicated = {name for name in names if names.count(name) > 1}
    results = [_failure(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name.") for name in sorted(duplicated)]
    for wanted in request.topics:
        if wanted.name in duplicated:
            continue
        if not may_create(broker, ctx, wanted.name):
            results.append(_failure(wanted.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                    "Authorization failed."))
            continue
        problem = _problem(broker, wanted)
        if problem is not None:
            results.append(_failure(wanted.name, *problem))
            continue
        partitions = len(wanted.assignments) or (
            broker.config["num.partitions"] if wanted.num_partitions == -1 else wanted.num_partitions)
        configs = {c.name: c.value for c in wanted.configs}
        try:
            topic = broker.topics.create(wanted.name, partitions, configs, validate_only=request.validate_only)
        except TopicError as exc:  # checked above; kept so a registry rule added later still answers
            results.append(_failure(wanted.name, ErrorCode[exc.code_name], str(exc)))
            continue
        if not request.validate_only:
            log.info("topic_created", topic=topic.name, partitions=partitions, topic_id=str(topic.topic_id),
                     client_id=ctx.client_id)
        results.append(Result(name=topic.name, topic_id=topic.topic_id if not request.validate_only else ZERO_UUID,
                              error_code=0, error_message=None, num_partitions=partitions, replication_factor=1,
                              configs=_config_entries(broker, configs)))
    response = CreateTopicsResponse(topics=results)
    if broker.cluster is not None and not request.validate_only and any(r.error_code == 0 for r in results):
        return Pending(_published(broker, response))
    return response


async def _published(broker: Broker, response: CreateTopicsResponse) -> CreateTopicsResponse:
    """A cluster node answers once its new topics are in the database: every node can then learn them
    (a commit for one on another node re-reads the table before refusing it)."""
    await learn_shared_topics(broker)
    return response
