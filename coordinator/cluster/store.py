"""Record batches in PostgreSQL: the shards' logs of a cluster, fenced by the owner's lease epoch.

A shard (a `__consumer_offsets` partition, named as Kafka names a TopicPartition) is a sequence of
Kafka record batches v2 in `gc_batches`, ordered by base offset. Appends queue up while one
transaction commits, and the next transaction takes all of them, as the file store's appends share
one fsync. Each transaction first locks the lease rows of the shards it writes, checking that this
node still owns each with the epoch it claimed and that the lease has not expired by the database's
clock: a node that lost a lease (paused, cut off) cannot write again, whatever its own clock says.

`PgRecordStore` is the group runtime's record store over it (coordinator/server/record_store.py):
shards are loaded when their lease is won (`ownership.py`), not at start.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import structlog

from coordinator.log.batch import BatchHeader, build_keyed_batch_from_columns, set_base_offset
from coordinator.log.transactions import control_batch
from coordinator.records import Record
from coordinator.records.transactional import LogBatch, resolve
from coordinator.server.log_record_store import coordinator_batch, decoded_records, resolvable_batch
from coordinator.topics import OFFSETS_TOPIC

log = structlog.get_logger()

# A shard whose log has this many batches more than at its last compaction is compacted.
COMPACT_AFTER_BATCHES = 2000


class StoreUnavailable(OSError):
    """The database could not take the write (down, unreachable, timed out): retriable. An OSError, as
    the runtime maps a failed write of any store to NOT_COORDINATOR."""


class Fenced(StoreUnavailable):
    """This node no longer holds the shard's lease with the epoch it wrote under."""


def shard_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def offsets_shard(partition: int) -> str:
    return shard_name(OFFSETS_TOPIC, partition)


_Pending = tuple[str, bytes, int, "asyncio.Future[None]"]

# Lease rows are always locked in shard order (appends, renewals), so two statements never deadlock.
_LOCK_LEASES = """
    SELECT l.shard, l.next_offset FROM gc_leases l
    JOIN unnest($1::text[], $2::bigint[]) AS held(shard, epoch) ON l.shard = held.shard AND l.epoch = held.epoch
    WHERE l.owner = $3 AND l.expires_at > now()
    ORDER BY l.shard FOR UPDATE OF l"""
# One statement, so one round trip, for a whole group commit: lock the written shards' leases that
# this node still holds (epoch and expiry checked), give each batch its base offset (the shard's next
# offset plus the records of the batches before it, written into the batch's first 8 bytes as a broker
# assigns offsets on append), insert the batches and advance the shards' next offsets. Returns the
# shards it could write; the others are fenced.
_APPEND = """
    WITH held AS (""" + _LOCK_LEASES + """),
    incoming AS (
        SELECT a.shard, a.record_count, a.batch,
               held.next_offset + sum(a.record_count) OVER (PARTITION BY a.shard ORDER BY a.ord) - a.record_count
                   AS base_offset
        FROM unnest($4::text[], $5::integer[], $6::bytea[]) WITH ORDINALITY AS a(shard, record_count, batch, ord)
        JOIN held ON held.shard = a.shard),
    inserted AS (
        INSERT INTO gc_batches (shard, base_offset, record_count, batch)
        SELECT shard, base_offset, record_count, overlay(batch PLACING int8send(base_offset) FROM 1 FOR 8)
        FROM incoming RETURNING shard),
    advanced AS (
        UPDATE gc_leases l SET next_offset = l.next_offset + added.records
        FROM (SELECT shard, sum(record_count) AS records FROM incoming GROUP BY shard) AS added
        WHERE l.shard = added.shard RETURNING l.shard)
    SELECT shard FROM held"""


class BatchStore:
    """The shards' record batches; appends are group-committed and fenced by lease epochs."""

    def __init__(self, pool: Any, node_id: int, on_fenced: Callable[[str], None] | None = None) -> None:
        self.pool = pool
        self.node_id = node_id
        self.epochs: dict[str, int] = {}  # shard -> the epoch this node claimed it with
        self.on_fenced = on_fenced
        self.appended_batches: dict[str, int] = {}  # shard -> batches appended since its last compaction
        self._queue: list[_Pending] = []
        self._wakeup = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closing = False
        self.transactions = 0

    def start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._write_loop())

    def append(self, shard: str, batch: bytes, count: int) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((shard, batch, count, done))
        self._wakeup.set()
        return done

    async def _write_loop(self) -> None:
        while not (self._closing and not self._queue):
            await self._wakeup.wait()
            self._wakeup.clear()
            while self._queue:
                pending, self._queue = self._queue, []
                await self._commit(pending)

    async def _commit(self, pending: list[_Pending]) -> None:
        """One transaction for every append queued: lock and check the leases, insert, advance."""
        shards = sorted({shard for shard, _, _, _ in pending})
        held = [self.epochs.get(shard, -1) for shard in shards]
        fenced: set[str] = set()
        try:
            async with self.pool.acquire() as conn:
                written = {row["shard"] for row in await conn.fetch(
                    _APPEND, shards, held, self.node_id, [shard for shard, _, _, _ in pending],
                    [count for _, _, count, _ in pending], [batch for _, batch, _, _ in pending])}
            fenced = set(shards) - written
        except Exception as exc:  # the outcome of the transaction is unknown: nothing is acknowledged
            log.warning("store_write_failed", shards=len(shards), appends=len(pending), error=repr(exc))
            failure = StoreUnavailable(f"PostgreSQL write failed: {exc!r}")
            for _, _, _, done in pending:
                if not done.done():
                    done.set_exception(failure)
            self._fail_queued(set(shards), failure)
            return
        self.transactions += 1
        for shard, _, _, done in pending:
            if done.done():
                continue
            if shard in fenced:
                done.set_exception(Fenced(f"lease on {shard} lost (epoch {self.epochs.get(shard)})"))
            else:
                self.appended_batches[shard] = self.appended_batches.get(shard, 0) + 1
                done.set_result(None)
        if fenced:
            self._fail_queued(fenced, Fenced(f"lease on {', '.join(sorted(fenced))} lost"))
        for shard in fenced:
            log.warning("store_write_fenced", shard=shard, epoch=self.epochs.get(shard))
            if self.on_fenced is not None:
                self.on_fenced(shard)

    def _fail_queued(self, shards: set[str], failure: Exception) -> None:
        """Appends queued for `shards` behind a failed one were computed on top of records that may not
        be in the log: they fail too, before any transaction could write them (the runtime reloads the
        shard from what the log holds, as Kafka's runtime reverts a shard to its last committed state)."""
        kept: list[_Pending] = []
        for item in self._queue:
            if item[0] in shards:
                if not item[3].done():
                    item[3].set_exception(failure)
            else:
                kept.append(item)
        self._queue = kept

    async def read(self, shard: str) -> list[tuple[Sequence[bytes], Sequence[bytes | None]] | LogBatch]:
        """The shard's batches as `resolve` takes them, oldest first."""
        async with self.pool.acquire() as conn:
            rows = await conn.fetch("SELECT batch FROM gc_batches WHERE shard = $1 ORDER BY base_offset", shard)
        return [_resolvable(row["batch"]) for row in rows]

    async def compact(self, shard: str) -> bool:
        """Rewrite the shard's log as each key's latest record (tombstones dropped: nothing before them
        remains to delete), under its lease like any append. False if the lease was lost."""
        async with self.pool.acquire() as conn, conn.transaction():
            rows = await conn.fetch(_LOCK_LEASES, [shard], [self.epochs.get(shard, -1)], self.node_id)
            if not rows:
                return False
            batches = await conn.fetch("SELECT base_offset, batch FROM gc_batches WHERE shard = $1 "
                                       "ORDER BY base_offset", shard)
            if len(batches) < 2:
                return True
            resolved = resolve(_resolvable(row["batch"]) for row in batches)
            if resolved.pending_before or resolved.pending_after:
                return True  # an open transaction's records and marker must stay: compacted after it ends
            live = {key: value for key, value in zip(resolved.keys, resolved.values, strict=True) if value is not None}
            await conn.execute("DELETE FROM gc_batches WHERE shard = $1", shard)
            if live:
                first = int(batches[0]["base_offset"])
                batch = bytearray(build_keyed_batch_from_columns(list(live), list(live.values()),
                                                                 int(time.time() * 1000)))
                set_base_offset(batch, first)
                await conn.execute("INSERT INTO gc_batches (shard, base_offset, record_count, batch) "
                                   "VALUES ($1, $2, $3, $4)", shard, first, len(live), bytes(batch))
        self.appended_batches[shard] = 0
        log.info("store_compacted", shard=shard, batches=len(batches), live_records=len(live))
        return True

    async def close(self) -> None:
        """What was queued before the close still gets its transaction."""
        self._closing = True
        self._wakeup.set()
        if self._writer is not None:
            await self._writer


def _resolvable(batch: bytes) -> tuple[Sequence[bytes], Sequence[bytes | None]] | LogBatch:
    return resolvable_batch(batch, BatchHeader.parse(batch))


class PgRecordStore:
    """The group runtime's record store in PostgreSQL: one shard per `__consumer_offsets` partition."""

    def __init__(self, batches: BatchStore) -> None:
        self.batches = batches

    def partitions(self) -> Iterable[int]:
        return []  # shards are loaded when this node wins their lease, not at start

    def read_all(self, partition: int) -> Iterable[Record]:
        raise StoreUnavailable("a PostgreSQL shard is read with load(), asynchronously")

    def read_partitions(self) -> Iterator[tuple[int, Iterable[Record]]]:
        return iter(())

    async def load(self, partition: int) -> list[Record]:
        """The partition's live records (each key's latest), decoded, in log order."""
        shard = offsets_shard(partition)
        batches = await self.batches.read(shard)
        # A log taken over may be long already: count it, so that compaction does not wait for as many
        # appends again on this node.
        self.batches.appended_batches[shard] = len(batches)
        return list(decoded_records(resolve(batches)))

    def append(self, partition: int, records: Sequence[Record]) -> asyncio.Future[None]:
        batch = coordinator_batch(records, int(time.time() * 1000))
        return self.batches.append(offsets_shard(partition), batch, len(records))

    def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> asyncio.Future[None]:
        """A transaction's commit/abort marker in the shard, as a control batch (one record)."""
        batch = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000))
        return self.batches.append(offsets_shard(partition), batch, 1)

    async def close(self) -> None:
        await self.batches.close()
