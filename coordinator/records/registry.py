"""Every record type the coordinator writes to `__consumer_offsets`, in one table.

Byte format, as Kafka's `CoordinatorRecordSerde` writes it:
  key   = int16 record type (= the key schema's version) + key message
  value = int16 value version + value message, or None for a tombstone

Record types are Kafka's (`CoordinatorRecordType`, the `apiKey` of each `*Key.json` in Kafka's
group-coordinator): 0/1 OffsetCommit, 2 GroupMetadata, 3-8 the KIP-848 consumer group records,
10-15 the share group records (KIP-932), 16 the KIP-848 regular-expression record.
30000 is ours (`ClassicGroupReason`, see `records/reasons.py`); Kafka's loader logs and skips a
type it does not know, so a Kafka broker can still load a log we wrote.

Adding a record type is one `register(...)` call below (plus its factories in the family's module);
the codec, `groupcoord log dump` and the Spark reader then decode it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from protocol.messages import (
    ClassicGroupReasonKey,
    ClassicGroupReasonValue,
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
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
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
    TransactionLogKey,
    TransactionLogValue,
)


class RecordType(IntEnum):
    """Record types of `__consumer_offsets` (the key's int16 prefix)."""

    OFFSET_COMMIT_V0 = 0  # legacy key version, still readable
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15  # share-partitions initializing, initialized, deleting
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16  # KIP-848 regex subscriptions: a resolved regular expression
    CLASSIC_GROUP_REASON = 30000  # ours, see the module docstring


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """One record type: its key and value message classes (one class covers every version of a
    schema), the value version the factories write, and how readers name and group it."""

    record_type: int
    name: str  # the key schema's name less "Key": "OffsetCommit", "ConsumerGroupMetadata", ...
    kind: str  # the family-level label of the Spark reader's `kind` column
    key_class: Any
    value_class: Any
    written_value_version: int
    group_attr: str  # the key field holding the group id ("group" in classic keys, "group_id" in KIP-848 ones)
    member_attr: str | None = None  # the key field holding a member id, for per-member records

    @property
    def value_versions(self) -> tuple[int, ...]:
        return tuple(self.value_class.spec.versions)


REGISTRY: dict[int, RecordSchema] = {}


#: The records of `__transaction_state`, by key version: the same byte format, its own numbering
#: (Kafka's TransactionLog: key version 0, value versions 0 and the flexible 1).
TRANSACTION_LOG_REGISTRY: dict[int, RecordSchema] = {}


def register(record_type: int, kind: str, key_class: Any, value_class: Any, written_value_version: int,
             group_attr: str, member_attr: str | None = None,
             registry: dict[int, RecordSchema] = REGISTRY) -> RecordSchema:
    """Add a record type (of `__consumer_offsets`, or of the log `registry` is the table of); the key
    class must carry `record_type` among its versions."""
    if record_type in registry:
        raise ValueError(f"record type {record_type} registered twice")
    if record_type not in key_class.spec.versions:
        raise ValueError(f"{key_class.name} has no version {record_type}")
    schema = RecordSchema(record_type, key_class.name.removesuffix("Key"), kind, key_class, value_class,
                          written_value_version, group_attr, member_attr)
    registry[record_type] = schema
    return schema


# Versions written are the ones Kafka writes today: GroupMetadataValue 3, OffsetCommitValue 3 (1
# when the commit carries an expire timestamp, i.e. OffsetCommit v2-4 with a retention), and
# version 0 of every KIP-848 value.
register(RecordType.OFFSET_COMMIT_V0, "offset_commit", OffsetCommitKey, OffsetCommitValue, 3, "group")
register(RecordType.OFFSET_COMMIT, "offset_commit", OffsetCommitKey, OffsetCommitValue, 3, "group")
register(RecordType.GROUP_METADATA, "group_metadata", GroupMetadataKey, GroupMetadataValue, 3, "group")
register(RecordType.CONSUMER_GROUP_METADATA, "consumer_group_metadata",
         ConsumerGroupMetadataKey, ConsumerGroupMetadataValue, 0, "group_id")
register(RecordType.CONSUMER_GROUP_PARTITION_METADATA, "consumer_group_partition_metadata",
         ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue, 0, "group_id")
register(RecordType.CONSUMER_GROUP_MEMBER_METADATA, "consumer_group_member_metadata",
         ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, 0, "group_id", "member_id")
register(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, "consumer_group_target_assignment_metadata",
         ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue, 0, "group_id")
register(RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, "consumer_group_target_assignment_member",
         ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue, 0, "group_id", "member_id")
register(RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, "consumer_group_current_member_assignment",
         ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue, 0, "group_id",
         "member_id")
register(RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION, "consumer_group_regular_expression",
         ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue, 0, "group_id")
register(RecordType.SHARE_GROUP_MEMBER_METADATA, "share_group_member_metadata",
         ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue, 0, "group_id", "member_id")
register(RecordType.SHARE_GROUP_METADATA, "share_group_metadata", ShareGroupMetadataKey, ShareGroupMetadataValue, 0,
         "group_id")
register(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, "share_group_target_assignment_metadata",
         ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue, 0, "group_id")
register(RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, "share_group_target_assignment_member",
         ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue, 0, "group_id", "member_id")
register(RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, "share_group_current_member_assignment",
         ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue, 0, "group_id", "member_id")
register(RecordType.SHARE_GROUP_STATE_PARTITION_METADATA, "share_group_state_partition_metadata",
         ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue, 0, "group_id")
register(RecordType.CLASSIC_GROUP_REASON, "group_reason", ClassicGroupReasonKey, ClassicGroupReasonValue, 1, "group")
# __transaction_state: value v1 (flexible), what Kafka 4.x writes once transaction.version >= 1.
TRANSACTION_LOG_KEY_VERSION = 0
register(TRANSACTION_LOG_KEY_VERSION, "transaction_log", TransactionLogKey, TransactionLogValue, 1,
         "transactional_id", registry=TRANSACTION_LOG_REGISTRY)

#: The KIP-848 consumer group record types, which the consumer group core replays.
CONSUMER_GROUP_RECORD_TYPES = frozenset([*range(RecordType.CONSUMER_GROUP_METADATA,
                                                RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT + 1),
                                         RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION])

#: The share group record types (KIP-932), which the share group core replays.
SHARE_GROUP_RECORD_TYPES = frozenset(range(RecordType.SHARE_GROUP_MEMBER_METADATA,
                                           RecordType.SHARE_GROUP_STATE_PARTITION_METADATA + 1))

GROUP_METADATA_VALUE_VERSION = REGISTRY[RecordType.GROUP_METADATA].written_value_version
OFFSET_COMMIT_VALUE_VERSION = REGISTRY[RecordType.OFFSET_COMMIT].written_value_version
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
CLASSIC_GROUP_REASON_VALUE_VERSION = REGISTRY[RecordType.CLASSIC_GROUP_REASON].written_value_version
CONSUMER_GROUP_VALUE_VERSION = 0
