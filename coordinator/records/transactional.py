"""Transactional offset commits in a `__consumer_offsets` log, resolved into what replay applies.

Kafka writes a TxnOffsetCommit as ordinary OffsetCommit records (type 1) in a *transactional* batch
of the producer (producer id/epoch set, transactional attribute), and the transaction coordinator
later appends a control batch (commit or abort marker) of that producer to the same partition.
Replay keeps such records pending until the marker, then applies them (COMMIT) or drops them
(ABORT): OffsetMetadataManager.replay(recordOffset, producerId, ...) and replayEndTransactionMarker.
Two rules of Kafka's decide the result and are kept here:

- a tombstone of a key removes that key from every open transaction's pending offsets;
- a committed transactional offset is applied only if it was written after the key's committed
  offset (its record offset is greater): a plain commit written later wins over it.

A loader reads a log as the cleaner leaves it, each key's latest record; `resolve` does that and
the transactions at once, in one pass: transactional records wait per producer for their marker,
then take their place under the second rule. Records of transactions still open at the end of the
log come back as pending records (`Record.producer_id` set), for the shard to hold until the marker
the transaction coordinator still owes them; those a later plain commit already overrides are put
before the committed records, so replaying them in that order makes them lose, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from coordinator.records.codec import merge_batch

#: One batch of a log, as a loader frames it: keys, values, producer id (-1: none), producer epoch,
#: whether it is transactional, and for a control batch its marker (True commit, False abort; None
#: for a data batch or a control batch compaction emptied).
LogBatch = tuple[Sequence[bytes], Sequence["bytes | None"], int, int, bool, "bool | None"]

# (producer id, producer epoch, key, value)
PendingRecord = tuple[int, int, bytes, "bytes | None"]


@dataclass(slots=True)
class ResolvedLog:
    """Each key's committed value (latest first-to-last, None a tombstone) and the still-pending
    records of open transactions: replay `pending_before`, then the committed records, then
    `pending_after`."""

    keys: list[bytes] = field(default_factory=list)
    values: list[bytes | None] = field(default_factory=list)
    pending_before: list[PendingRecord] = field(default_factory=list)
    pending_after: list[PendingRecord] = field(default_factory=list)


def resolve(batches: Iterable[tuple[Sequence[bytes], Sequence[bytes | None]] | LogBatch]) -> ResolvedLog:
    """Resolve a log given batch by batch, oldest first. A `(keys, values)` pair is a plain batch."""
    latest: dict[bytes, bytes | None] = {}
    resolver: _TransactionResolver | None = None
    # Plain batches are merged a chunk of records at a time (merge_batch's work is per distinct key).
    keys: list[bytes] = []
    values: list[bytes | None] = []
    for batch in batches:
        if resolver is None:
            if len(batch) == 2 or (batch[2] < 0 and not batch[4]):  # type: ignore[misc, unused-ignore]
                keys += batch[0]
                values += batch[1]
                if len(keys) >= MERGE_CHUNK:
                    merge_batch(latest, keys, values)
                    keys, values = [], []
                continue
            merge_batch(latest, keys, values)
            resolver = _TransactionResolver(latest)  # from here on, positions matter
        resolver.add(batch)
    if resolver is not None:
        return resolver.result()
    merge_batch(latest, keys, values)
    return ResolvedLog(list(latest), list(latest.values()))


MERGE_CHUNK = 1 << 16  # records of plain batches merged at once: bounded memory, per-key work


class _TransactionResolver:
    """Kafka's replay rules over positions: `position` counts records from where transactions began."""

    def __init__(self, latest: dict[bytes, bytes | None]) -> None:
        self.latest = latest
        self.position_of: dict[bytes, int] = {}  # keys written before the first transaction: older than all
        self.position = 0
        self.open: dict[int, list[tuple[int, bytes, bytes | None, int]]] = {}  # pid -> (epoch, key, value, pos)
        self.open_keys: dict[bytes, set[int]] = {}  # key -> producers with a pending record of it

    def add(self, batch: tuple[Sequence[bytes], Sequence[bytes | None]] | LogBatch) -> None:
        if len(batch) == 2:
            keys, values, pid, epoch, transactional, marker = batch[0], batch[1], -1, -1, False, None
        else:
            keys, values, pid, epoch, transactional, marker = batch  # type: ignore[misc, unused-ignore]
        if marker is not None or (transactional and not keys):
            self._end_transaction(pid, marker)
            return
        for key, value in zip(keys, values, strict=True):
            self.position += 1
            if transactional and pid >= 0 and value is not None:
                self.open.setdefault(pid, []).append((epoch, key, value, self.position))
                self.open_keys.setdefault(key, set()).add(pid)
            else:
                self._commit(key, value, self.position)

    def _commit(self, key: bytes, value: bytes | None, position: int) -> None:
        self.latest.pop(key, None)
        self.latest[key] = value
        self.position_of[key] = position
        if value is None:  # a tombstone drops the key from every open transaction
            for pid in self.open_keys.pop(key, ()):
                self.open[pid] = [entry for entry in self.open[pid] if entry[1] != key]

    def _end_transaction(self, pid: int, commit: bool | None) -> None:
        if commit is None:  # an emptied marker (compaction) closes nothing
            return
        for _, key, value, position in self.open.pop(pid, ()):
            holders = self.open_keys.get(key)
            if holders is not None:
                holders.discard(pid)
                if not holders:
                    del self.open_keys[key]
            if commit and self.position_of.get(key, 0) < position:
                self._commit(key, value, position)

    def result(self) -> ResolvedLog:
        resolved = ResolvedLog(list(self.latest), list(self.latest.values()))
        pending = sorted((position, pid, epoch, key, value) for pid, entries in self.open.items()
                         for epoch, key, value, position in entries)
        for position, pid, epoch, key, value in pending:  # in log order, which replay compares by
            overridden = self.position_of.get(key, 0) > position
            (resolved.pending_before if overridden else resolved.pending_after).append((pid, epoch, key, value))
        return resolved


def resolved_records(resolved: ResolvedLog) -> Iterator[tuple[bytes, bytes | None, int, int]]:
    """(key, value, producer id, producer epoch) in replay order."""
    for pid, epoch, key, value in resolved.pending_before:
        yield key, value, pid, epoch
    for key, value in zip(resolved.keys, resolved.values, strict=True):
        yield key, value, -1, -1
    for pid, epoch, key, value in resolved.pending_after:
        yield key, value, pid, epoch
