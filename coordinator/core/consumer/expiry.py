"""Offset expiry of consumer groups (docs/spec/offsets.md#consumer-groups), run by the shard's periodic retention sweep.

A consumer group's offsets age from their commit timestamp (or end at their explicit expire
timestamp), whatever the group's state: Kafka's ConsumerGroup always offers that expiration
condition. Offsets of topics some member subscribes to never expire. When nothing is left of an
Empty group's offsets (or it had none), the group itself is deleted with its full tombstone set,
after the offset tombstones, as Kafka's cleanupGroupMetadata does.

The offsets live with the classic core (`ShardState.offsets`); this module only reads them and
returns records, like every handler.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.core.consumer.deletion import consumer_group_deletion_records
from coordinator.core.consumer.model import ConsumerGroupState
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import OffsetAndMetadata, offset_commit_tombstone

StoredOffsets = Mapping[str, Mapping[tuple[str, int], OffsetAndMetadata]]  # group -> (topic, partition) -> offset


def is_expired(offset: OffsetAndMetadata, now_ms: int, retention_ms: int) -> bool:
    if offset.expire_timestamp_ms is not None:  # committed with an explicit retention (OffsetCommit v2-v4)
        return now_ms >= offset.expire_timestamp_ms
    return now_ms - offset.commit_timestamp_ms >= retention_ms


def expire_consumer_group_offsets(state: ShardState, offsets: StoredOffsets, retention_ms: int,
                                  fx: Effects) -> None:
    """Tombstones for the expired offsets of every consumer group, then for the Empty groups left without any."""
    for group in sorted(state.groups.consumer_groups(), key=lambda g: g.group_id):
        group_id = group.group_id
        subscribed = group.subscribed_topic_names()
        stored = offsets.get(group_id, {})
        expired = [tp for tp, offset in sorted(stored.items())
                   if tp[0] not in subscribed and is_expired(offset, fx.now_ms, retention_ms)]
        fx.records.extend(offset_commit_tombstone(group_id, topic, partition) for topic, partition in expired)
        if expired:
            fx.event("offsets_expired", group_id, partitions=len(expired))
        if len(expired) == len(stored) and group.state is ConsumerGroupState.EMPTY:
            fx.records.extend(consumer_group_deletion_records(state, group_id))
            fx.event("group_expired", group_id)
