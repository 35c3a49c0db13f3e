"""What ShareFetch and ShareAcknowledge share: request checks, the session step, acknowledgements.
docs/spec/share-groups.md#sessions, #share-fetch."""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.core.share.partition import AcknowledgementBatch, AcknowledgeType
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, Pending, RequestContext
from coordinator.server.share_partitions import FINAL_EPOCH
from protocol.error_codes import ErrorCode


class ShareRequestError(Exception):
    """A whole-request error: the response carries it at the top level, without partitions."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def check_request(broker: Broker, request: Any, ctx: RequestContext) -> None:
    if not request.group_id or not request.member_id:
        raise ShareRequestError(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set.")
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        raise ShareRequestError(ErrorCode.GROUP_AUTHORIZATION_FAILED)


def partition_error(broker: Broker, ctx: RequestContext, topic_id: Any, index: int) -> ErrorCode:
    """Why the partition cannot be served (NONE when it can)."""
    topic = broker.topics.by_id(topic_id)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if not permits_topic(broker, ctx, Operation.READ, topic.name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not 0 <= index < topic.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # A cluster node keeps the share-partitions of the partitions it leads only, as Kafka's
    # SharePartitionManager does: the client goes to the leader named in CurrentLeader.
    not_leader = broker.data.leader_error(topic.name, index)
    return ErrorCode.NONE if not_leader is None else not_leader


def current_leader(broker: Broker, topic_id: Any, index: int) -> tuple[int, int]:
    """(leader id, leader epoch) of a partition as ShareFetch/ShareAcknowledge name it: this node with
    epoch 0 when it is the only node; a cluster's lease holder; (-1, -1) while nobody leads it."""
    if broker.cluster is None:
        return broker.node_id, 0
    topic = broker.topics.by_id(topic_id)
    found = broker.data.leader_of(topic.name, index) if topic is not None else None
    return found if found is not None else (-1, -1)


def leader_endpoints(broker: Broker, leaders: set[int], endpoint: Any) -> list[Any]:
    """NodeEndpoints of the other nodes named as leaders (KIP-951: the client need not ask Metadata)."""
    if broker.cluster is None:
        return []
    nodes = {n.node_id: n for n in broker.cluster.live_nodes()}
    return [endpoint(node_id=n.node_id, host=n.host, port=n.port, rack=None)
            for node_id in sorted(leaders - {broker.node_id}) if (n := nodes.get(node_id)) is not None]


def acknowledge(broker: Broker, ctx: RequestContext, request: Any, topic_id: Any, index: int,
                batches: list[Any]) -> ErrorCode:
    """Apply one partition's acknowledgement batches; the partition's acknowledge error."""
    code = partition_error(broker, ctx, topic_id, index)
    if code != ErrorCode.NONE:
        return code
    renew = ctx.api_version >= 2 and request.is_renew_ack
    highest = AcknowledgeType.RENEW if renew else AcknowledgeType.REJECT
    for batch in batches:
        if any(not 0 <= t <= highest for t in batch.acknowledge_types) or not batch.acknowledge_types:
            return ErrorCode.INVALID_REQUEST
    return broker.share.acknowledge(request.group_id, request.member_id, topic_id, index,
                                    [AcknowledgementBatch(b.first_offset, b.last_offset, b.acknowledge_types)
                                     for b in batches])


def after_durable(durable: asyncio.Future[None] | None, response: Any) -> Any:
    """`response` once the share-state writes it depends on are durable (a failed write: the
    request fails with UNKNOWN_SERVER_ERROR, and what it acknowledged may be delivered again)."""
    if durable is None:
        return response

    async def wait() -> Any:
        await wait_durable(durable)
        return response

    return Pending(wait())


async def wait_durable(durable: asyncio.Future[None] | None) -> None:
    if durable is None:
        return
    try:
        await durable
    except OSError as exc:
        raise HandlerError(ErrorCode.UNKNOWN_SERVER_ERROR) from exc


def is_closing(request: Any) -> bool:
    return bool(request.share_session_epoch == FINAL_EPOCH)
