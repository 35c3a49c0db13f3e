"""Where the group runtime keeps coordinator records: one log per `__consumer_offsets` partition.

The runtime needs only two things of a store: the records of a partition, in
order, when it loads; and an append that completes once the records are durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from coordinator.records import Record
from coordinator.records.transactional import LogBatch, resolve, resolved_records


class RecordStore(Protocol):
    def partitions(self) -> Iterable[int]:
        """Partitions that hold records (loaded at start)."""

    def read_all(self, partition: int) -> Iterable[Record]:
        """The records of `partition`, oldest first; a store may leave out records whose key a later
        record rewrites, as compaction does (replay keeps only a key's latest value)."""

    def read_partitions(self) -> Iterator[tuple[int, Iterable[Record]]]:
        """Every partition that holds records with its records (as `read_all`), in partition order;
        a store may read ahead while the caller replays."""

    def append(self, partition: int, records: Sequence[Record]) -> asyncio.Future[None]:
        """Write `records`; the future completes when they are durable (or fails). The runtime passes
        the records of an Outcome: for offset commits a RecordsToWrite, whose columns() a store writing
        bytes takes without building records. Records of a producer (TxnOffsetCommit, all of one
        producer) are written as that producer's transactional batch."""

    def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> asyncio.Future[None]:
        """Write the commit/abort marker of the producer's transaction (a control batch)."""

    async def close(self) -> None: ...


class MemoryRecordStore:
    """Records kept in memory: for tests and for a server run without durability. Reading resolves
    transactions as the log store does (coordinator.records.transactional)."""

    def __init__(self) -> None:
        self._logs: dict[int, list[Record | tuple[int, int, bool]]] = {}

    def partitions(self) -> Iterable[int]:
        return list(self._logs)

    def read_all(self, partition: int) -> Iterable[Record]:
        batches: list[tuple[list[bytes], list[bytes | None]] | LogBatch] = []
        for entry in self._logs.get(partition, ()):
            if isinstance(entry, tuple):
                batches.append(((), (), entry[0], entry[1], True, entry[2]))
            elif entry.producer_id >= 0:
                batches.append(([entry.key], [entry.value], entry.producer_id, entry.producer_epoch, True, None))
            else:
                batches.append(([entry.key], [entry.value]))
        return [Record(key, value, None, pid, epoch) for key, value, pid, epoch in resolved_records(resolve(batches))]

    def read_partitions(self) -> Iterator[tuple[int, Iterable[Record]]]:
        return ((partition, self.read_all(partition)) for partition in sorted(self._logs))

    def append(self, partition: int, records: Sequence[Record]) -> asyncio.Future[None]:
        self._logs.setdefault(partition, []).extend(records)
        return _done()

    def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> asyncio.Future[None]:
        self._logs.setdefault(partition, []).append((producer_id, producer_epoch, commit))
        return _done()

    async def close(self) -> None:
        return None


def _done() -> asyncio.Future[None]:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done
