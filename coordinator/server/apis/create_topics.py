"""CreateTopics (key 19), v2–7.

Replication factor must be -1 or 1 on one node; num_partitions -1 takes
`num.partitions`; manual assignments name this node only. v1 validate_only;
v4 defaults (-1); v5 flexible, the created topic's partitions, replication
factor and configs in the response; v7 topic id.
"""

from __future__ import annotations

import structlog

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreateTopicsResponse
from protocol.primitives import ZERO_UUID
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topic_configs import TOPIC_SETTINGS, topic_default, validate_topic_config
from coordinator.topics import TopicError

log = structlog.get_logger()
Result = CreateTopicsResponse.CreatableTopicResult
ConfigEntry = CreateTopicsResponse.CreatableTopicConfigs
DEFAULT_CONFIG_SOURCE, TOPIC_CONFIG_SOURCE = 5, 1


def _failure(name: str, code: ErrorCode, message: str | None) -> Result:
    return Result(name=name, topic_id=ZERO_UUID, error_code=int(code), error_message=message, num_partitions=-1,
                  replication_factor=-1, configs=None)


def create_topics_error(request, code: ErrorCode, version: int) -> CreateTopicsResponse:  # type: ignore[no-untyped-def]
    return CreateTopicsResponse(topics=[_failure(t.name, code, None) for t in request.topics])


def _check(broker: Broker, wanted) -> tuple[ErrorCode, str] | None:  # type: ignore[no-untyped-def]
    if wanted.replication_factor not in (-1, 1) and not wanted.assignments:
        return ErrorCode.INVALID_REPLICATION_FACTOR, (
            f"replication factor {wanted.replication_factor} is larger than the 1 available broker")
    if wanted.assignments:
        if wanted.num_partitions != -1 or wanted.replication_factor != -1:
            return ErrorCode.INVALID_REQUEST, "give either assignments or partitions and replication factor"
        for assignment in wanted.assignments:
            if assignment.broker_ids != [broker.node_id]:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"only broker {broker.node_id} exists"
    elif wanted.num_partitions == 0 or wanted.num_partitions < -1:
        return ErrorCode.INVALID_PARTITIONS, f"number of partitions must be at least 1, got {wanted.num_partitions}"
    for entry in wanted.configs:
        problem = validate_topic_config(entry.name, entry.value)
        if problem:
            return ErrorCode.INVALID_CONFIG, problem
    return None


@api(ApiKey.CREATE_TOPICS, versions=(2, 7), error_response=create_topics_error)
def create_topics(broker: Broker, request, ctx: RequestContext) -> CreateTopicsResponse:  # type: ignore[no-untyped-def]
    results = []
    seen: set[str] = set()
    for wanted in request.topics:
        if wanted.name in seen:
            results.append(_failure(wanted.name, ErrorCode.INVALID_REQUEST, "topic named twice in one request"))
            continue
        seen.add(wanted.name)
        problem = _check(broker, wanted)
        if problem is not None:
            results.append(_failure(wanted.name, *problem))
            continue
        partitions = len(wanted.assignments) or (
            broker.config["num.partitions"] if wanted.num_partitions == -1 else wanted.num_partitions)
        configs = {c.name: c.value for c in wanted.configs}
        try:
            topic = broker.topics.create(wanted.name, partitions, configs, validate_only=request.validate_only)
        except TopicError as exc:
            results.append(_failure(wanted.name, ErrorCode[exc.code_name], str(exc)))
            continue
        if not request.validate_only:
            log.info("topic_created", topic=topic.name, partitions=partitions, topic_id=str(topic.topic_id),
                     client_id=ctx.client_id)
        entries = [ConfigEntry(name=s.name, value=configs.get(s.name, topic_default(broker.config, s)),
                               read_only=False, is_sensitive=False,
                               config_source=TOPIC_CONFIG_SOURCE if s.name in configs else DEFAULT_CONFIG_SOURCE)
                   for s in TOPIC_SETTINGS.values()]
        results.append(Result(name=topic.name, topic_id=topic.topic_id, error_code=0, error_message=None,
                              num_partitions=partitions, replication_factor=1, configs=entries))
    return CreateTopicsResponse(topics=results)
