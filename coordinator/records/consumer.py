"""KIP-848 consumer group records (types 3-8, value version 0), as Kafka's
`GroupCoordinatorRecordHelpers` writes them:

    type  key                                       value
    3     ConsumerGroupMetadataKey                  group epoch
    4     ConsumerGroupPartitionMetadataKey         subscription metadata (topics with partition counts)
    5     ConsumerGroupMemberMetadataKey            a member's metadata and subscription
    6     ConsumerGroupTargetAssignmentMetadataKey  assignment epoch (and, tagged, when it was computed)
    7     ConsumerGroupTargetAssignmentMemberKey    a member's target assignment
    8     ConsumerGroupCurrentMemberAssignmentKey   a member's epochs, state and current assignment
    16    ConsumerGroupRegularExpressionKey         a resolved regular expression (topics, version, time)

Orders the handlers write (and the consumer group core's replay checks):
    heartbeat:      [static replacement: 8-tomb, 7-tomb, 5-tomb (old id), 5, 7, 8 (new id)], 5, 16*, 4?, 3?, 7*, 6?, 8?
    member removal: 8-tomb, 7-tomb, 5-tomb, 16-tomb*, 4?, 3
    group deletion: 8-tomb all, 7-tomb all, 6-tomb, 5-tomb all, 16-tomb all, 4-tomb, 3-tomb

Built from the core's ConsumerGroup / ConsumerMember through the protocols below (records never
import the core); replaying them is the core's business (`core/consumer_group/replay.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Protocol

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import CONSUMER_GROUP_VALUE_VERSION, RecordType
from protocol.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.primitives import Uuid

#: topic id -> partitions (the core's Assignment)
AssignmentLike = Mapping[Uuid, Collection[int]]


class TopicLike(Protocol):
    """Read-only views: the factories only read, so frozen dataclasses satisfy them."""

    @property
    def topic_id(self) -> Uuid: ...
    @property
    def name(self) -> str: ...
    @property
    def num_partitions(self) -> int: ...


class ClassicMetadataLike(Protocol):
    """A classic-protocol member's JoinGroup metadata, kept in a consumer group (KIP-848 upgrade)."""

    @property
    def session_timeout_ms(self) -> int: ...
    @property
    def protocols(self) -> tuple[tuple[str, bytes], ...]: ...


class ConsumerMemberLike(Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def rack_id(self) -> str | None: ...
    @property
    def client_id(self) -> str: ...
    @property
    def client_host(self) -> str: ...
    @property
    def subscribed_topic_names(self) -> Iterable[str]: ...
    @property
    def subscribed_topic_regex(self) -> str | None: ...
    @property
    def rebalance_timeout_ms(self) -> int: ...
    @property
    def server_assignor(self) -> str | None: ...
    @property
    def classic(self) -> ClassicMetadataLike | None: ...
    @property
    def member_epoch(self) -> int: ...
    @property
    def previous_member_epoch(self) -> int: ...
    @property
    def state(self) -> int: ...  # an int enum
    @property
    def assigned_partitions(self) -> AssignmentLike: ...
    @property
    def partitions_pending_revocation(self) -> AssignmentLike: ...


class ConsumerGroupLike(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def members(self) -> Mapping[str, object]: ...
    @property
    def target_assignment(self) -> Mapping[str, object]: ...
    @property
    def resolved_regexes(self) -> Mapping[str, object]: ...


def _record(record_type: int, key: Any, value: Any | None) -> Record:
    value_bytes = None if value is None else encode_message(CONSUMER_GROUP_VALUE_VERSION, value)
    return Record(encode_message(record_type, key), value_bytes)


def sorted_assignment(assignment: AssignmentLike) -> list[tuple[Uuid, list[int]]]:
    """(topic id, sorted partitions) by topic id: the order the records carry."""
    return [(topic_id, sorted(assignment[topic_id])) for topic_id in sorted(assignment, key=str)]


def consumer_group_epoch_record(group_id: str, epoch: int) -> Record:
    return _record(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey(group_id=group_id),
                   ConsumerGroupMetadataValue(epoch=epoch))


def consumer_group_epoch_tombstone(group_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_METADATA, ConsumerGroupMetadataKey(group_id=group_id), None)


def subscription_metadata_record(group_id: str, metadata: Mapping[str, TopicLike]) -> Record:
    """Topics sorted by name; per-partition rack metadata is left empty, as in the snapshot."""
    topic = ConsumerGroupPartitionMetadataValue.TopicMetadata
    value = ConsumerGroupPartitionMetadataValue(topics=[
        topic(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.num_partitions, partition_metadata=[])
        for _, t in sorted(metadata.items())])
    return _record(RecordType.CONSUMER_GROUP_PARTITION_METADATA,
                   ConsumerGroupPartitionMetadataKey(group_id=group_id), value)


def subscription_metadata_tombstone(group_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_PARTITION_METADATA,
                   ConsumerGroupPartitionMetadataKey(group_id=group_id), None)


def _classic_metadata_value(member: ConsumerMemberLike) -> Any:
    """The tagged ClassicMemberMetadata of the member metadata record (None: a consumer-protocol member)."""
    if member.classic is None:
        return None
    protocol = ConsumerGroupMemberMetadataValue.ClassicProtocol
    return ConsumerGroupMemberMetadataValue.ClassicMemberMetadata(
        session_timeout_ms=member.classic.session_timeout_ms,
        supported_protocols=[protocol(name=name, metadata=metadata) for name, metadata in member.classic.protocols])


def member_subscription_record(group_id: str, member: ConsumerMemberLike) -> Record:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=sorted(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic_member_metadata=_classic_metadata_value(member))
    return _record(RecordType.CONSUMER_GROUP_MEMBER_METADATA,
                   ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id), value)


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_MEMBER_METADATA,
                   ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> Record:
    """`timestamp_ms`: when the computation finished (KIP-1263 tagged field; 0 is left off the wire)."""
    return _record(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                   ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
                   ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                              assignment_timestamp=timestamp_ms))


def assignment_epoch_tombstone(group_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                   ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def target_assignment_record(group_id: str, member_id: str, target: AssignmentLike) -> Record:
    tp = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    value = ConsumerGroupTargetAssignmentMemberValue(
        topic_partitions=[tp(topic_id=t, partitions=ps) for t, ps in sorted_assignment(target)])
    return _record(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                   ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), value)


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                   ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def current_assignment_record(group_id: str, member: ConsumerMemberLike) -> Record:
    tp = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=int(member.state),
        assigned_partitions=[tp(topic_id=t, partitions=ps) for t, ps in sorted_assignment(member.assigned_partitions)],
        partitions_pending_revocation=[tp(topic_id=t, partitions=ps)
                                       for t, ps in sorted_assignment(member.partitions_pending_revocation)])
    return _record(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                   ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id), value)


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                   ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def regular_expression_record(group_id: str, regex: str, topics: Iterable[str], version: int,
                              timestamp_ms: int) -> Record:
    """A resolved regular expression: the topics it matched in the topic image of `version`, at `timestamp_ms`."""
    return _record(RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
                   ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
                   ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version, timestamp=timestamp_ms))


def regular_expression_tombstone(group_id: str, regex: str) -> Record:
    return _record(RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
                   ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None)


def member_removal_tombstones(group_id: str, member_id: str) -> list[Record]:
    """Removing a member: current assignment, target, then subscription (replay checks this order)."""
    return [current_assignment_tombstone(group_id, member_id), target_assignment_tombstone(group_id, member_id),
            member_subscription_tombstone(group_id, member_id)]


def group_deletion_tombstones(group: ConsumerGroupLike) -> list[Record]:
    """Deleting a whole group (DeleteGroups, expiry of an empty group), in the order replay checks."""
    gid = group.group_id
    member_ids = sorted(group.members)
    target_ids = sorted(set(group.target_assignment) | set(member_ids))
    return ([current_assignment_tombstone(gid, m) for m in member_ids]
            + [target_assignment_tombstone(gid, m) for m in target_ids]
            + [assignment_epoch_tombstone(gid)]
            + [member_subscription_tombstone(gid, m) for m in member_ids]
            + [regular_expression_tombstone(gid, regex) for regex in sorted(group.resolved_regexes)]
            + [subscription_metadata_tombstone(gid), consumer_group_epoch_tombstone(gid)])
