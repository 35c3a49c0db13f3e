"""docs/spec/consumer-protocol.md#heartbeat-request: ConsumerGroupHeartbeat checks made before any group is touched, in
Kafka's order and words."""

from __future__ import annotations

from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.model import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatRequest


def _is_blank(text: str | None) -> bool:
    """Java's `value.trim().isEmpty()`: trim() strips every character up to U+0020."""
    return text is not None and not text.lstrip("".join(map(chr, range(0x21))))


def _invalid(message: str) -> ConsumerGroupError:
    return ConsumerGroupError(ErrorCode.INVALID_REQUEST, message)


def validate_heartbeat(req: ConsumerGroupHeartbeatRequest, config: ConsumerGroupConfig) -> None:
    if _is_blank(req.group_id):
        raise _invalid("GroupId can't be empty.")
    if _is_blank(req.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if _is_blank(req.rack_id):
        raise _invalid("RackId can't be empty.")
    # A regular expression is checked by the group when it is new to it (regex.py); "" means none (librdkafka
    # 2.16 sends it on v1 when it subscribes by name).

    epoch = req.member_epoch
    if epoch > 0 or epoch == LEAVE_EPOCH:
        if _is_blank(req.member_id):
            raise _invalid("MemberId can't be empty.")
    elif epoch == JOIN_EPOCH:
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        # Kafka 4.4's rule (throwIfConsumerGroupHeartbeatRequestIsInvalid): both null is refused, an empty
        # list admitted (a member subscribed to nothing; it bumps no epoch, see tests/differential).
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if _is_blank(req.member_id):
            raise _invalid("MemberId can't be empty.")
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    else:
        raise _invalid("MemberEpoch is invalid.")

    if req.server_assignor is not None and req.server_assignor not in config.assignors:
        raise ConsumerGroupError(
            ErrorCode.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(config.assignors)}.")


def is_full_request(req: ConsumerGroupHeartbeatRequest) -> bool:
    """A full request carries every field (a (re)join, or a retry after an error);
    docs/spec/consumer-protocol.md#heartbeat-request."""
    return req.member_epoch == JOIN_EPOCH or (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None)
