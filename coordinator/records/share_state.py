"""Records of the share-state log `__share_group_state` (Kafka's share coordinator,
ShareCoordinatorRecordHelpers), a type space of its own beside `__consumer_offsets`':

    type  key                 value
    0     ShareSnapshotKey    the whole state of one share-partition (start offset, state batches)
    1     ShareUpdateKey      changed state batches since the snapshot (start offset -1: unchanged)

Both keyed by (group id, topic id, partition); a snapshot tombstone deletes the share-partition.
groupcoord writes snapshots only (each replaces the last, so compaction keeps one record per
share-partition); it reads updates too, applied over the snapshot before them in log order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from coordinator.records.codec import Record, encode_message
from protocol.messages import ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue
from protocol.primitives import Uuid

SHARE_STATE_TOPIC = "__share_group_state"
VALUE_VERSION = 0


class ShareStateRecordType(IntEnum):
    SHARE_SNAPSHOT = 0
    SHARE_UPDATE = 1


@dataclass(frozen=True, slots=True)
class PersistedBatch:
    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One decoded record: a snapshot, an update, or (value None) a snapshot tombstone."""

    record_type: ShareStateRecordType
    group_id: str
    topic_id: Uuid
    partition: int
    value: Any | None


def state_partition_key(group_id: str, topic_id: Uuid, partition: int) -> str:
    """What chooses the `__share_group_state` partition (Kafka's SharePartitionKey.asCoordinatorKey)."""
    return f"{group_id}:{topic_id}:{partition}"


def snapshot_record(group_id: str, topic_id: Uuid, partition: int, *, snapshot_epoch: int, state_epoch: int,
                    start_offset: int, batches: Iterable[PersistedBatch], create_ms: int, write_ms: int) -> Record:
    key = ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition)
    value = ShareSnapshotValue(
        snapshot_epoch=snapshot_epoch, state_epoch=state_epoch, leader_epoch=0, start_offset=start_offset,
        create_timestamp=create_ms, write_timestamp=write_ms,
        state_batches=[ShareSnapshotValue.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                                     delivery_state=b.state, delivery_count=b.delivery_count)
                       for b in batches])
    return Record(encode_message(ShareStateRecordType.SHARE_SNAPSHOT, key), encode_message(VALUE_VERSION, value))


def snapshot_tombstone(group_id: str, topic_id: Uuid, partition: int) -> Record:
    key = ShareSnapshotKey(group_id=group_id, topic_id=topic_id, partition=partition)
    return Record(encode_message(ShareStateRecordType.SHARE_SNAPSHOT, key), None)


_KEYS: dict[ShareStateRecordType, tuple[Any, Any]] = {
    ShareStateRecordType.SHARE_SNAPSHOT: (ShareSnapshotKey, ShareSnapshotValue),
    ShareStateRecordType.SHARE_UPDATE: (ShareUpdateKey, ShareUpdateValue)}


def decode_share_state(key: bytes, value: bytes | None) -> ShareStateRecord:
    """Raises ValueError for a record type this log does not hold."""
    record_type = ShareStateRecordType(int.from_bytes(key[:2], "big", signed=True))
    key_class, value_class = _KEYS[record_type]
    key_message = key_class.decode(key[2:], int(record_type))
    value_message = None
    if value is not None:
        value_message = value_class.decode(value[2:], int.from_bytes(value[:2], "big", signed=True))
    return ShareStateRecord(record_type, key_message.group_id, key_message.topic_id, key_message.partition,
                            value_message)


def batches_of(value: Any) -> list[PersistedBatch]:
    return [PersistedBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in value.state_batches]
