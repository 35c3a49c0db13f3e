"""What share-partitions count for the metrics page, named as Kafka 4.4 names them where it has a name.

* `kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=Accept|Release|Reject|Renew`
  (ShareGroupMetrics.recordAcknowledgement: records, by acknowledgement type) ->
  `kafka_server_share_group_metrics_record_acknowledgements{ackType}`;
* `kafka.server:type=SharePartitionMetrics,name=AcquisitionLockTimeoutPerSec,group,topic,partition`
  (records whose acquisition lock ran out) -> `kafka_server_share_partition_metrics_acquisition_lock_timeout`;
* `InFlightMessageCount` per share-partition is a gauge (coordinator/metrics/gauges.py).

Kafka has no metric for deliveries, redeliveries and archived records; these are `groupcoord_share_*`:
records handed out (first delivery or redelivery) and records archived (rejected, at the delivery
count limit, or of an aborted transaction), per group.

Counted from the state before a change is applied, and only once it was (acknowledgements are all
or none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from coordinator.core.share.partition import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    PartitionLimits,
    RecordState,
    SharePartition,
)
from coordinator.metrics.registry import Labels, labels_of
from coordinator.metrics.server_metrics import ServerMetrics

# ShareGroupMetrics' ackType tag: AcknowledgeType.toString() capitalized
_ACK_TYPE_LABELS: dict[int, Labels] = {int(t): labels_of({"ackType": t.name.capitalize()})
                                       for t in AcknowledgeType if t is not AcknowledgeType.GAP}


def _exhausted(sp: SharePartition, offsets: Iterable[int], limits: PartitionLimits) -> int:
    """Of the acquired `offsets`, how many a release would archive (their count reached the limit)."""
    records = sp.records
    return sum(1 for o in offsets if (r := records.get(o)) is not None and r.state is RecordState.ACQUIRED
               and r.delivery_count >= limits.delivery_count_limit)


class ShareCounts:
    """Counts one change of a share-partition: `prepare_*` reads the state before it, `commit` counts."""

    __slots__ = ("_acks", "_archived", "_group", "metrics")

    def __init__(self, metrics: ServerMetrics, group_id: str) -> None:
        self.metrics = metrics
        self._group = group_id
        self._acks: dict[int, int] = {}
        self._archived: dict[str, int] = {}

    def acknowledgements(self, sp: SharePartition, batches: Sequence[AcknowledgementBatch],
                         limits: PartitionLimits) -> ShareCounts:
        for batch in batches:
            if len(batch.types) == 1:  # one type for the whole batch, the usual case: counted at once
                self._count(sp, batch.types[0], range(batch.first_offset, batch.last_offset + 1), limits)
                continue
            for offset, kind in zip(range(batch.first_offset, batch.last_offset + 1), batch.types, strict=False):
                self._count(sp, kind, range(offset, offset + 1), limits)
        return self

    def _count(self, sp: SharePartition, kind: int, offsets: range, limits: PartitionLimits) -> None:
        self._acks[kind] = self._acks.get(kind, 0) + len(offsets)
        if kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
            self._archived["rejected"] = self._archived.get("rejected", 0) + len(offsets)
        elif kind == AcknowledgeType.RELEASE:
            self._archived["delivery_limit"] = (self._archived.get("delivery_limit", 0)
                                                + _exhausted(sp, offsets, limits))

    def releases(self, sp: SharePartition, offsets: Iterable[int], limits: PartitionLimits) -> ShareCounts:
        """Records going back without an acknowledgement (lock expiry, the session closing)."""
        self._archived["delivery_limit"] = self._archived.get("delivery_limit", 0) + _exhausted(sp, offsets, limits)
        return self

    def commit(self) -> None:
        m = self.metrics
        for kind, count in self._acks.items():
            labels = _ACK_TYPE_LABELS.get(kind)
            if labels is not None and count:
                m.share_acknowledgements.inc_key(labels, count)
        for reason, count in self._archived.items():
            if count:
                m.share_archived.inc(count, group=self._group, reason=reason)


def count_deliveries(metrics: ServerMetrics, group_id: str, ranges: Sequence[AcquiredRange]) -> None:
    first = sum(r.last_offset - r.first_offset + 1 for r in ranges if r.delivery_count == 1)
    again = sum(r.last_offset - r.first_offset + 1 for r in ranges if r.delivery_count > 1)
    if first:
        metrics.share_deliveries.inc(first, group=group_id, delivery="first")
    if again:
        metrics.share_deliveries.inc(again, group=group_id, delivery="redelivery")


def count_aborted(metrics: ServerMetrics, group_id: str, archived: int) -> None:
    if archived:
        metrics.share_archived.inc(archived, group=group_id, reason="aborted_transaction")


def count_lock_timeouts(metrics: ServerMetrics, group_id: str, topic: str, index: int, expired: int) -> None:
    if expired:
        metrics.share_lock_timeouts.inc(expired, group=group_id, topic=topic, partition=index)


def expiring(sp: SharePartition, now_ms: int) -> list[int]:
    """The acquired offsets whose lock has run out at `now_ms`."""
    return [o for o, r in sp.records.items() if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms]
