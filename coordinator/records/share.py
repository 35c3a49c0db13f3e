"""Share group records (KIP-932, types 10-15, value version 0), as Kafka's `GroupCoordinatorRecordHelpers`
writes them:

    type  key                                      value
    10    ShareGroupMemberMetadataKey              a member's rack, client id and host, subscription
    11    ShareGroupMetadataKey                    group epoch, hash of the subscribed topics' metadata
    12    ShareGroupTargetAssignmentMetadataKey    assignment epoch
    13    ShareGroupTargetAssignmentMemberKey      a member's target assignment
    14    ShareGroupCurrentMemberAssignmentKey     a member's epochs and current assignment
    15    ShareGroupStatePartitionMetadataKey      share-partitions initializing, initialized, deleting

Orders written (docs/spec/share-groups.md#durable-state): heartbeat 10?, 11?, 13*, 12?, 14?, 15?;
member removal 14-tomb, 13-tomb, 10-tomb, 11; group deletion the members' tombstones, then 12, 15, 11.
Type 15 is written with initialized topics only: on one node the share coordinator is this process,
so a share-partition is initialized in the heartbeat that first sees it subscribed (Kafka records it
initializing first, and initialized once its share coordinator answered).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import RecordType
from protocol.messages import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from protocol.primitives import Uuid

VALUE_VERSION = 0
AssignmentLike = Mapping[Uuid, Collection[int]]


def _record(record_type: int, key: Any, value: Any | None) -> Record:
    return Record(encode_message(record_type, key), None if value is None else encode_message(VALUE_VERSION, value))


def _sorted(assignment: AssignmentLike) -> list[tuple[Uuid, list[int]]]:
    return [(topic_id, sorted(assignment[topic_id])) for topic_id in sorted(assignment, key=str)]


def share_member_metadata_record(group_id: str, member_id: str, rack_id: str | None, client_id: str,
                                 client_host: str, subscribed: Iterable[str]) -> Record:
    return _record(RecordType.SHARE_GROUP_MEMBER_METADATA,
                   ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id),
                   ShareGroupMemberMetadataValue(rack_id=rack_id, client_id=client_id, client_host=client_host,
                                                 subscribed_topic_names=list(subscribed)))


def share_member_metadata_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_MEMBER_METADATA,
                   ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def share_group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> Record:
    return _record(RecordType.SHARE_GROUP_METADATA, ShareGroupMetadataKey(group_id=group_id),
                   ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash))


def share_group_epoch_tombstone(group_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_METADATA, ShareGroupMetadataKey(group_id=group_id), None)


def share_assignment_epoch_record(group_id: str, epoch: int, now_ms: int) -> Record:
    return _record(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                   ShareGroupTargetAssignmentMetadataKey(group_id=group_id),
                   ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=now_ms))


def share_assignment_epoch_tombstone(group_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                   ShareGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def share_target_record(group_id: str, member_id: str, target: AssignmentLike) -> Record:
    part = ShareGroupTargetAssignmentMemberValue.TopicPartition
    return _record(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                   ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
                   ShareGroupTargetAssignmentMemberValue(topic_partitions=[
                       part(topic_id=t, partitions=p) for t, p in _sorted(target)]))


def share_target_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                   ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def share_current_assignment_record(group_id: str, member_id: str, member_epoch: int, previous_epoch: int,
                                    assigned: AssignmentLike) -> Record:
    part = ShareGroupCurrentMemberAssignmentValue.TopicPartitions
    return _record(RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                   ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
                   ShareGroupCurrentMemberAssignmentValue(
                       member_epoch=member_epoch, previous_member_epoch=previous_epoch, state=0,
                       assigned_partitions=[part(topic_id=t, partitions=p) for t, p in _sorted(assigned)]))


def share_current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                   ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def share_initialized_record(group_id: str, initialized: Mapping[Uuid, tuple[str, Collection[int]]]) -> Record:
    """topic id -> (name, partitions) of every initialized share-partition of the group."""
    info = ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo
    return _record(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
                   ShareGroupStatePartitionMetadataKey(group_id=group_id),
                   ShareGroupStatePartitionMetadataValue(
                       initializing_topics=[], deleting_topics=[], initialized_topics=[
                           info(topic_id=topic_id, topic_name=initialized[topic_id][0],
                                partitions=sorted(initialized[topic_id][1]))
                           for topic_id in sorted(initialized, key=str)]))


def share_initialized_tombstone(group_id: str) -> Record:
    return _record(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA,
                   ShareGroupStatePartitionMetadataKey(group_id=group_id), None)
