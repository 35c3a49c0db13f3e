"""Coordinator records: every record type of `__consumer_offsets`, its factories, and the one codec.

    registry.py      record type -> key/value schema, value version written (`register` adds a type)
    codec.py         Record, DecodedRecord and the one decoder (decode_record, RecordDecoder)
    offsets.py       offset commits (types 0/1), the column form of a commit
    classic.py       classic group metadata (type 2)
    consumer.py      KIP-848 consumer group records (types 3-8)
    reasons.py       our reason records (type 30000): KIP-800 texts and every removal's cause
    loaded.py        a loaded log as replay takes it: plain offset commits as columns
    transaction_log.py  `__transaction_state` records (TransactionLog key v0, value v0/v1)
    transactional.py    transactional offset commits and markers in a log, resolved for replay
    describe.py      one line of text per record (`groupcoord log dump`)
    partitioning.py  the `__consumer_offsets` partition of a group

Shared by the core, the store, the CLI and `spark_jobs`: build records only through the factories,
decode only through `codec`. Everything below is importable from `coordinator.records` itself.
"""

from coordinator.records.classic import (
    ClassicGroupLike,
    MemberLike,
    empty_group_metadata_record,
    group_metadata_key,
    group_metadata_record,
    group_metadata_tombstone,
    group_metadata_value,
)
from coordinator.records.codec import (
    DecodedRecord,
    Record,
    RecordDecoder,
    UnknownRecordType,
    decode_record,
    decode_record_versions,
    decode_transaction_log_record,
    encode_message,
    latest_per_key,
)
from coordinator.records.describe import describe_record, describe_transaction_log_record
from coordinator.records.loaded import LoadedRecords, OffsetCommitColumns, loaded_records, resolved_log_records
from coordinator.records.offsets import (
    OFFSET_KEY_CACHE_SIZE,
    CommittedPartition,
    OffsetAndMetadata,
    OffsetCommitRun,
    RecordsToWrite,
    offset_commit_key,
    offset_commit_record,
    offset_commit_run,
    offset_commit_tombstone,
    offset_from_value,
)
from coordinator.records.partitioning import java_string_hash, partition_for
from coordinator.records.reasons import (
    LEFT_CAUSES,
    GroupReason,
    RemovalCause,
    group_reason_key,
    group_reason_record,
    group_reason_tombstone,
    member_removal_record,
    reason_from_value,
)
from coordinator.records.registry import (
    CLASSIC_GROUP_REASON_VALUE_VERSION,
    CONSUMER_GROUP_RECORD_TYPES,
    GROUP_METADATA_VALUE_VERSION,
    OFFSET_COMMIT_VALUE_VERSION,
    OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY,
    REGISTRY,
    SHARE_GROUP_RECORD_TYPES,
    TRANSACTION_LOG_KEY_VERSION,
    TRANSACTION_LOG_REGISTRY,
    RecordSchema,
    RecordType,
    register,
)
from coordinator.records.transaction_log import (
    TRANSACTION_LOG_VALUE_VERSION,
    transaction_log_key,
    transaction_log_record,
    transaction_log_tombstone,
)

__all__ = [
    "CLASSIC_GROUP_REASON_VALUE_VERSION",
    "CONSUMER_GROUP_RECORD_TYPES",
    "GROUP_METADATA_VALUE_VERSION",
    "LEFT_CAUSES",
    "OFFSET_COMMIT_VALUE_VERSION",
    "OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY",
    "OFFSET_KEY_CACHE_SIZE",
    "REGISTRY",
    "SHARE_GROUP_RECORD_TYPES",
    "TRANSACTION_LOG_KEY_VERSION",
    "TRANSACTION_LOG_REGISTRY",
    "TRANSACTION_LOG_VALUE_VERSION",
    "ClassicGroupLike",
    "CommittedPartition",
    "DecodedRecord",
    "GroupReason",
    "LoadedRecords",
    "MemberLike",
    "OffsetAndMetadata",
    "OffsetCommitColumns",
    "OffsetCommitRun",
    "Record",
    "RecordDecoder",
    "RecordSchema",
    "RecordType",
    "RecordsToWrite",
    "RemovalCause",
    "UnknownRecordType",
    "decode_record",
    "decode_record_versions",
    "decode_transaction_log_record",
    "describe_record",
    "describe_transaction_log_record",
    "empty_group_metadata_record",
    "encode_message",
    "group_metadata_key",
    "group_metadata_record",
    "group_metadata_tombstone",
    "group_metadata_value",
    "group_reason_key",
    "group_reason_record",
    "group_reason_tombstone",
    "java_string_hash",
    "latest_per_key",
    "loaded_records",
    "member_removal_record",
    "offset_commit_key",
    "offset_commit_record",
    "offset_commit_run",
    "offset_commit_tombstone",
    "offset_from_value",
    "partition_for",
    "reason_from_value",
    "register",
    "resolved_log_records",
    "transaction_log_key",
    "transaction_log_record",
    "transaction_log_tombstone",
]
