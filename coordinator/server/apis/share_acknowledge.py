"""ShareAcknowledge (key 79), v1-2: acknowledgements outside a fetch (commitSync, close with epoch
-1). The session rules of ShareFetch, except that epoch 0 is INVALID_SHARE_SESSION_EPOCH and the
partition set does not change. docs/spec/share-groups.md#share-fetch."""

from __future__ import annotations

from typing import Any

from coordinator.server.apis._share import (
    ShareRequestError,
    acknowledge,
    after_durable,
    check_request,
    current_leader,
    is_closing,
    leader_endpoints,
)
from coordinator.server.broker import Broker
from coordinator.server.registry import Reply, RequestContext, api
from coordinator.server.share_partitions import INITIAL_EPOCH, SessionError
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareAcknowledgeResponse

Topic = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
PartitionData = ShareAcknowledgeResponse.PartitionData
Leader = ShareAcknowledgeResponse.LeaderIdAndEpoch


def _error(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
    return ShareAcknowledgeResponse(error_code=int(code), error_message=message, responses=[], node_endpoints=[])


def share_acknowledge_error(request: Any, code: ErrorCode, version: int) -> ShareAcknowledgeResponse:
    return _error(code)


@api(ApiKey.SHARE_ACKNOWLEDGE, versions=(1, 2), error_response=share_acknowledge_error)
def share_acknowledge(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    share = broker.share
    try:
        check_request(broker, request, ctx)
        if request.share_session_epoch == INITIAL_EPOCH:
            raise ShareRequestError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, "Epoch 0 cannot acknowledge.")
        session = share.session_at(request.group_id, request.member_id, request.share_session_epoch, ctx.peer)
    except ShareRequestError as exc:
        return _error(exc.code)  # Kafka 4.4 gives these errors no message
    except SessionError as exc:
        return _error(exc.code)
    topics = []
    moved: set[int] = set()
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            code = acknowledge(broker, ctx, request, topic.topic_id, p.partition_index, p.acknowledgement_batches)
            leader_id, leader_epoch = current_leader(broker, topic.topic_id, p.partition_index)
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                moved.add(leader_id)
            partitions.append(PartitionData(partition_index=p.partition_index, error_code=int(code),
                                            current_leader=Leader(leader_id=leader_id, leader_epoch=leader_epoch)))
        topics.append(Topic(topic_id=topic.topic_id, partitions=partitions))
    closed = None
    if is_closing(request):  # the acknowledgements may be written by the close: wait for that write too
        closed = share.close_session(request.group_id, request.member_id)
    else:
        session.next_epoch()
    lock_ms = share.limits_for(request.group_id).lock_duration_ms
    return after_durable(share.persist() or closed, ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=lock_ms, responses=topics,
        node_endpoints=leader_endpoints(broker, moved, ShareAcknowledgeResponse.NodeEndpoint)))
