"""ConsumerGroupHeartbeat responses (docs/spec/consumer-protocol.md#wire-facts and
docs/spec/consumer-protocol.md#heartbeat-response)."""

from __future__ import annotations

from coordinator.core.consumer.model import Assignment
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatResponse

_Assignment = ConsumerGroupHeartbeatResponse.Assignment
_TopicPartitions = ConsumerGroupHeartbeatResponse.TopicPartitions


def heartbeat_assignment(assigned: Assignment) -> _Assignment:
    """The member's assigned partitions; never those pending revocation
    (docs/spec/consumer-protocol.md#heartbeat-response)."""
    return _Assignment(topic_partitions=[
        _TopicPartitions(topic_id=topic_id, partitions=sorted(assigned[topic_id]))
        for topic_id in sorted(assigned, key=str)])


def heartbeat_response(member_id: str, member_epoch: int, heartbeat_interval_ms: int,
                       assigned: Assignment | None) -> ConsumerGroupHeartbeatResponse:
    """Success; `assigned` None means "no change" (Assignment null on the wire)."""
    return ConsumerGroupHeartbeatResponse(
        error_code=ErrorCode.NONE, member_id=member_id, member_epoch=member_epoch,
        heartbeat_interval_ms=heartbeat_interval_ms,
        assignment=None if assigned is None else heartbeat_assignment(assigned))


def leave_response(member_id: str, member_epoch: int) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.NONE, member_id=member_id, member_epoch=member_epoch,
                                          heartbeat_interval_ms=0)


def heartbeat_error(code: ErrorCode, message: str | None) -> ConsumerGroupHeartbeatResponse:
    """On error: no member id, epoch 0, interval 0, no assignment."""
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message, member_id=None, member_epoch=0,
                                          heartbeat_interval_ms=0, assignment=None)
