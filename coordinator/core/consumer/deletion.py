"""Deleting a whole consumer group (DeleteGroups; docs/spec/offsets.md#consumer-groups): only an Empty one."""

from __future__ import annotations

from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.leave import ensure_consumer_group
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import Record
from coordinator.records.consumer import group_deletion_tombstones
from protocol.error_codes import ErrorCode


def consumer_group_deletion_records(state: ShardState, group_id: str) -> list[Record]:
    """The tombstones that delete the group (its offsets are the caller's: they live with the classic core)."""
    group = ensure_consumer_group(state, group_id)
    if group.members:
        raise ConsumerGroupError(ErrorCode.NON_EMPTY_GROUP, f"Group {group_id} is not empty.")
    return group_deletion_tombstones(group)
