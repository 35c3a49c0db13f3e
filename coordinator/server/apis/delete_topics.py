"""DeleteTopics (key 20), v1–6.

Deletes the topic from the registry and its partition logs. v4 flexible;
v5 error messages; v6 topics by name or id. The internal `__consumer_offsets`
cannot be deleted.
"""

from __future__ import annotations

from typing import Any

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DeleteTopicsResponse
from protocol.primitives import ZERO_UUID

log = structlog.get_logger()
Result = DeleteTopicsResponse.DeletableTopicResult


def _delete(broker: Broker, name: str | None, topic_id: Any, ctx: RequestContext) -> Result:
    client_id = ctx.client_id
    topic = broker.topics.get(name) if name is not None else broker.topics.by_id(topic_id)
    if not permits_topic(broker, ctx, Operation.DELETE, topic.name if topic is not None else name or ""):
        return Result(name=name, topic_id=topic_id, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                      error_message="Authorization failed.")
    if topic is None:
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if name is not None else ErrorCode.UNKNOWN_TOPIC_ID
        return Result(name=name, topic_id=topic_id, error_code=int(code), error_message="unknown topic")
    if topic.internal:
        return Result(name=topic.name, topic_id=topic.topic_id, error_code=int(ErrorCode.INVALID_TOPIC_EXCEPTION),
                      error_message="internal topics cannot be deleted")
    broker.topics.delete(topic.name)
    broker.data.delete_topic(topic.name)
    log.info("topic_deleted", topic=topic.name, topic_id=str(topic.topic_id), client_id=client_id)
    return Result(name=topic.name, topic_id=topic.topic_id, error_code=0, error_message=None)


@api(ApiKey.DELETE_TOPICS, versions=(1, 6))
def delete_topics(broker: Broker, request: Any, ctx: RequestContext) -> DeleteTopicsResponse:
    if ctx.api_version < 6:
        results = [_delete(broker, name, ZERO_UUID, ctx) for name in request.topic_names]
    else:
        results = [_delete(broker, t.name, t.topic_id, ctx) for t in request.topics]
    return DeleteTopicsResponse(responses=results)
