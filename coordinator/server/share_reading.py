"""How a share-partition reads its topic-partition's log under the group's settings.

* `initial_start_offset`: share.auto.offset.reset when a share-partition is first initialized
  (Kafka's SharePartition.startOffsetDuringInitialization): the log start (earliest), the log end
  (latest), or the first offset whose record timestamp is at or after now - duration (by_duration,
  through the log's time index as ListOffsets reads it).
* `readable_end` and `drop_aborted`: share.isolation.level=read_committed reads only below the last
  stable offset, and the records of aborted transactions it acquired are archived instead of being
  delivered (SharePartition.maybeFilterAbortedTransactionalAcquiredRecords), as a read_committed
  Fetch leaves them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from coordinator.core.share.partition import AcquiredRange, SharePartition
from coordinator.group_configs import ShareReset
from coordinator.log.batch import BatchHeader
from coordinator.log.partition import Partition

if TYPE_CHECKING:
    from coordinator.server.data_plane import DataPlane
    from coordinator.topics import Topic


def initial_start_offset(partition: Partition, reset: ShareReset, now_ms: int) -> int:
    if reset.kind == "earliest":
        return partition.log_start_offset
    if reset.kind == "by_duration" and reset.duration_ms is not None:
        found = partition.offset_for_timestamp(now_ms - reset.duration_ms)
        if found is not None and found[0] < partition.high_watermark:
            return found[0]
        # No record that recent. Kafka 4.4's ReplicaManagerPartitionMetadataProvider.offsetForTimestamp
        # raises OffsetNotAvailableException there and the initialization fails; here the
        # share-partition starts at the log end, where the next record will land.
    return partition.high_watermark


def readable_end(data: DataPlane, topic: Topic, index: int, partition: Partition, read_committed: bool) -> int:
    """The offset a share fetch reads up to: the high watermark, or the last stable offset."""
    if not read_committed:
        return partition.high_watermark
    return data.producer_state(topic.name, index, partition).last_stable_offset(partition.high_watermark)


def drop_aborted(data: DataPlane, topic: Topic, index: int, partition: Partition, sp: SharePartition,
                 member_id: str, headers: Sequence[BatchHeader], ranges: list[AcquiredRange]) -> list[AcquiredRange]:
    """The acquired ranges without the records of aborted transactions, which are archived."""
    if not ranges:
        return ranges
    first, last = ranges[0].first_offset, ranges[-1].last_offset
    aborted = data.producer_state(topic.name, index, partition).aborted_between(first, last + 1)
    if not aborted:
        return ranges
    spans = [(h.base_offset, h.last_offset) for h in headers
             if h.is_transactional and not h.is_control and any(
                 a.producer_id == h.producer_id and a.first_offset <= h.base_offset <= a.last_offset for a in aborted)]
    if not spans:
        return ranges
    for base, end in spans:
        for r in ranges:
            low, high = max(base, r.first_offset), min(end, r.last_offset)
            if low <= high:
                sp.archive_acquired(member_id, low, high)
    kept: list[AcquiredRange] = []
    for r in ranges:
        cursor = r.first_offset
        for base, end in sorted(spans):
            if end < cursor or base > r.last_offset:
                continue
            if base > cursor:
                kept.append(AcquiredRange(cursor, base - 1, r.delivery_count))
            cursor = end + 1
        if cursor <= r.last_offset:
            kept.append(AcquiredRange(cursor, r.last_offset, r.delivery_count))
    return kept
