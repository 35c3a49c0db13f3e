"""OffsetFetch (key 9), v0–9.
v1 reads offsets stored in Kafka; v2 top-level error and null topics = all;
v3 throttle time; v5 leader epoch; v6 flexible; v7 require_stable; v8 several
groups in one request (split by shard here); v9 member id/epoch (KIP-848).
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.apis._group_errors import offset_fetch_error
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode

NO_OFFSET = -1


@api(ApiKey.OFFSET_FETCH, versions=(0, 9), error_response=offset_fetch_error)
def offset_fetch(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if ctx.api_version < 8:
        if not permits_group(broker, ctx, Operation.DESCRIBE, request.group_id):
            raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        answer = broker.groups.handle(request.group_id, GroupShard.offset_fetch, request, ctx)
        if broker.authorizer is None:
            return answer
        return amend_answer(answer, lambda r: _hide_topics(broker, ctx, r.topics, explicit=request.topics is not None))
    answer = fan_out(broker, request, ctx, [g.group_id for g in request.groups], "groups", "groups",
                     Operation.DESCRIBE, GroupShard.offset_fetch)
    if broker.authorizer is None:
        return answer
    explicit = {g.group_id: g.topics is not None for g in request.groups}

    def hide(response: Any) -> None:
        for group in response.groups:
            _hide_topics(broker, ctx, group.topics, explicit.get(group.group_id, False))

    return amend_answer(answer, hide)


def _hide_topics(broker: Broker, ctx: RequestContext, topics: list[Any], explicit: bool) -> None:
    """Topics the principal may not DESCRIBE: asked for by name, their partitions say
    TOPIC_AUTHORIZATION_FAILED; listed because all topics were asked for, they are left out."""
    for topic in list(topics):
        if permits_topic(broker, ctx, Operation.DESCRIBE, topic.name):
            continue
        if not explicit:
            topics.remove(topic)
            continue
        for partition in topic.partitions:
            partition.committed_offset, partition.metadata = NO_OFFSET, ""
            partition.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
