"""User-topic partitions in PostgreSQL: their record batches, each led by one node through a lease.

With `coordinator.store.url` set, a topic partition's record batches (Kafka's batch bytes, as the file
log keeps them) are rows of `gc_batches` under the shard name `<topic>-<partition>`, and the partition
is led by the node holding its row in `gc_leases`, the lease machinery of the coordinator shards
(`ownership.py`): claimed with a bumped epoch by the live node a rendezvous hash prefers, renewed on
the database's clock, handed over on a clean shutdown.

The leader keeps the partition's batches in memory (`PgPartition`, loaded when it wins the lease,
with the producers' sequences rebuilt from them, as a broker rebuilds its producer state): it assigns
offsets, checks idempotent producers' sequences and answers Fetch and ListOffsets from memory. Every
append goes to PostgreSQL in a transaction that checks the lease's owner, epoch and expiry (appends
arriving together share one); the high watermark, what Fetch may read, moves only once that
transaction has committed, and a Produce is acknowledged only then, whatever its acks (one durable
store: acks=1 and acks=all are the same). A failed or fenced transaction drops the partition from
memory at once (records appended on top of it were never durable) and reloads it from the database
while the lease holds. A node asked about a partition it does not lead answers NOT_LEADER_OR_FOLLOWER,
and Metadata names each partition's lease holder as its leader (the lease epoch as leader epoch), so
clients move by themselves.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import functools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.cluster.ownership import (
    _CLAIM,
    _NODES,
    _RELEASE,
    LOCAL_LEASE_FRACTION,
    SETTLE_LEASES,
    STALE_HEARTBEATS,
    STATEMENT_TIMEOUT_S,
    Held,
    preferred_owner,
)
from coordinator.cluster.share_state import share_shard
from coordinator.cluster.store import _LOCK_LEASES, BatchStore, _Pending, shard_name
from coordinator.log.batch import BatchHeader, iter_records, set_base_offset, set_partition_leader_epoch, verify_crc
from coordinator.log.cleaner import CleanResult, clean_batches, latest_offsets_in, transaction_ranges_in
from coordinator.log.partition import LogConfig, OffsetOutOfRangeError, check_appended
from coordinator.log.transactions import ProduceError
from coordinator.server.data_plane import SINGLE_NODE_LEADER_EPOCH, DataPlane, partition_config
from coordinator.topics import Topic, TopicChange, TopicRegistry
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.cluster.ownership import Cluster
    from coordinator.cluster.share_state import ClusterShareState

log = structlog.get_logger()

# Renew the partitions' leases (only with the epoch claimed and before expiry), as the coordinator
# shards' round does; lease rows locked in shard order, like every other statement on them.
_RENEW = """
    UPDATE gc_leases l SET expires_at = now() + $2 * interval '1 millisecond'
    FROM (SELECT g.shard FROM gc_leases g
          JOIN unnest($3::text[], $4::bigint[]) AS held(shard, epoch) ON g.shard = held.shard AND g.epoch = held.epoch
          WHERE g.owner = $1 AND g.expires_at > now()
          ORDER BY g.shard FOR UPDATE OF g) AS mine
    WHERE l.shard = mine.shard
    RETURNING l.shard"""
_LEASES = "SELECT shard, owner, epoch, expires_at > now() AS live FROM gc_leases WHERE shard = ANY($1::text[])"
# Retention and DeleteRecords: the log start moves up, the batches wholly below it go; under the lease.
_MOVE_START = """
    WITH held AS (""" + _LOCK_LEASES + """),
    gone AS (DELETE FROM gc_batches b USING held
             WHERE b.shard = held.shard AND b.base_offset + b.record_count <= $4)
    INSERT INTO gc_log_starts (shard, log_start) SELECT shard, $4 FROM held
    ON CONFLICT (shard) DO UPDATE SET log_start = greatest(gc_log_starts.log_start, excluded.log_start)
    RETURNING shard"""


class NotLeader(ProduceError):
    """This node does not lead the partition (now): NOT_LEADER_OR_FOLLOWER, retried by clients after a
    Metadata refresh."""

    def __init__(self, shard: str) -> None:
        super().__init__(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"this node does not lead {shard}")


class WriteLost(OSError):
    """The partition's transaction failed or was fenced: nothing from it is acknowledged."""

    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class PartitionBatchStore(BatchStore):
    """The coordinator shards' group-committing, epoch-fenced writer, for topic partitions. A failed
    transaction is reported at once, in the step that learnt it, so that no append lands on top of a
    partition whose earlier records did not reach the database."""

    def __init__(self, node_id: int, on_failed: Any) -> None:
        super().__init__(None, node_id)
        self.on_failed = on_failed

    async def _commit(self, pending: list[_Pending]) -> None:
        await super()._commit(pending)
        failed = {shard for shard, _, _, done in pending if done.done() and done.exception() is not None}
        for shard in sorted(failed):
            self.on_failed(shard)
        self.appended_batches.clear()  # no compaction of the coordinators' kind here


class PgPartition:
    """A led partition in memory: what its rows hold, plus the appends not yet committed.

    The same surface as a file `Partition` where the handlers use one: offsets, `read`, `append`,
    the timestamp lookups."""

    def __init__(self, topic: str, index: int, config: LogConfig, log_start: int, next_offset: int,
                 batches: Iterable[bytes], store: PartitionBatchStore, on_committed: Any) -> None:
        self.topic, self.partition = topic, index
        self.shard = shard_name(topic, index)
        self.config = config
        self.bases: list[int] = []
        self.lasts: list[int] = []
        self.max_timestamps: list[int] = []
        self.batches: list[bytes] = []
        self.size_bytes = 0
        for batch in batches:
            self._keep(batch)
        self._log_start = log_start
        self.next_offset = next_offset
        self.committed = next_offset  # the high watermark: what PostgreSQL has
        self.store = store
        self.on_committed = on_committed
        self.last_write: asyncio.Future[None] | None = None
        self.failed = False
        self._clean_seen = -1  # the high watermark when a clean last found nothing to rewrite
        self._clean_recheck_ms = 0  # and when that may change without appends

    def _keep(self, batch: bytes) -> None:
        header = verify_crc(batch)
        self.bases.append(header.base_offset)
        self.lasts.append(header.base_offset + header.last_offset_delta)
        self.max_timestamps.append(header.max_timestamp)
        self.batches.append(batch)
        self.size_bytes += len(batch)

    # ---- offsets

    @property
    def log_start_offset(self) -> int:
        if self.config.compacted:  # cleaning leaves gaps at the start too, the log start stays (as Kafka's)
            return min(self._log_start, self.committed)
        first = self.bases[0] if self.bases else self.next_offset
        return min(max(self._log_start, first), self.committed)

    @property
    def high_watermark(self) -> int:
        return self.committed

    @property
    def log_end_offset(self) -> int:
        return self.committed

    # ---- writes

    def append(self, batch: bytes | bytearray, keys_checked: bool = False,
               leader_epoch: int | None = None) -> tuple[int, int]:
        """Check one v2 batch, give it the next offsets (and the leader epoch), keep it and send it to
        the database."""
        if self.failed:
            raise NotLeader(self.shard)
        header = check_appended(batch, self.config, keys_checked)
        base = self.next_offset
        buf = bytearray(batch)
        set_base_offset(buf, base)
        if leader_epoch is not None:
            set_partition_leader_epoch(buf, leader_epoch)
        data = bytes(buf)
        self._keep(data)
        span = header.last_offset_delta + 1
        self.next_offset = base + span
        write = self.store.append(self.shard, data, span)
        write.add_done_callback(functools.partial(self._written, end=self.next_offset))
        self.last_write = write
        return base, base + header.last_offset_delta

    def _written(self, done: asyncio.Future[None], *, end: int) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # the store reported the failure already (PartitionBatchStore.on_failed)
        if end > self.committed:
            self.committed = end
            self.on_committed()

    async def durable(self) -> None:
        """Returns once every append so far is committed; raises WriteLost if one was not. Writes of one
        partition commit in order and a failure fails every later one, so the last write tells."""
        write = self.last_write
        if write is None:
            return
        try:
            await asyncio.shield(write)
        except Exception as exc:
            raise WriteLost(f"{self.shard}: {exc}") from None

    # ---- reads

    def _index(self, offset: int) -> int:
        """The batch holding `offset` (or the first after it)."""
        return bisect.bisect_left(self.lasts, offset)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole committed batches from the one holding `offset`, the first even past `max_bytes`."""
        chunks: list[bytes] = []
        total = 0
        for i in range(self._index(offset), len(self.batches)):
            if self.lasts[i] >= self.committed:
                break
            batch = self.batches[i]
            if chunks and total + len(batch) > max_bytes:
                break
            chunks.append(batch)
            total += len(batch)
        return b"".join(chunks)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        start = self.log_start_offset
        for i in range(self._index(start), len(self.batches)):
            if self.lasts[i] >= self.committed:
                break
            if self.max_timestamps[i] < timestamp:
                continue
            for record in iter_records(self.batches[i]):
                if record.timestamp >= timestamp and record.offset >= start:
                    return record.offset, record.timestamp
            return self.lasts[i], self.max_timestamps[i]  # the header's claim, as the file log trusts it
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        best: int | None = None
        for i in range(self._index(self.log_start_offset), len(self.batches)):
            if self.lasts[i] >= self.committed:
                break
            if best is None or self.max_timestamps[i] > self.max_timestamps[best]:
                best = i
        if best is None:
            return None
        for record in iter_records(self.batches[best]):
            if record.timestamp >= self.max_timestamps[best]:
                return record.offset, record.timestamp
        return self.lasts[best], self.max_timestamps[best]

    # ---- retention

    def retained_start(self, now_ms: int) -> int:
        """Where the log would start after time and size retention (whole batches, oldest first)."""
        if not self.config.deletes:
            return self.log_start_offset
        start = self.log_start_offset
        size = sum(len(b) for i, b in enumerate(self.batches) if self.lasts[i] >= start)
        for i in range(self._index(start), len(self.batches)):
            if self.lasts[i] >= self.committed:
                break
            too_old = 0 <= self.config.retention_ms < now_ms - self.max_timestamps[i]
            too_big = 0 <= self.config.retention_bytes < size
            if not (too_old or too_big):
                break
            size -= len(self.batches[i])
            start = self.lasts[i] + 1
        return start

    def move_start(self, offset: int) -> None:
        """The log starts at `offset` now (committed in the database): forget the batches below it."""
        self._log_start = max(self._log_start, offset)
        drop = bisect.bisect_left(self.lasts, offset)
        if drop:
            self.size_bytes -= sum(len(b) for b in self.batches[:drop])
            del self.bases[:drop], self.lasts[:drop], self.max_timestamps[:drop], self.batches[:drop]

    # ---- compaction

    def cleanable(self, now_ms: int) -> CleanedRange | None:
        """The file log's cleaner over this partition's committed batches (`clean_batches`): the latest
        record per key, over the whole log; rewritten, the batches up to the first one with a record
        younger than min.compaction.lag.ms (Kafka's first uncleanable offset) or past the high
        watermark. None when cleaning would change nothing."""
        if not self.config.compacted or not self.batches:
            return None
        if self.committed == self._clean_seen and now_ms < self._clean_recheck_ms:
            return None  # nothing appended, no tombstone's horizon or compaction lag passed since
        newest_allowed = now_ms - self.config.min_compaction_lag_ms
        done = bisect.bisect_left(self.lasts, self.committed)
        count = 0
        while count < done and self.max_timestamps[count] <= newest_allowed:
            count += 1
        views = [(BatchHeader.parse(b), b) for b in self.batches[:done]]
        if count:
            txns = transaction_ranges_in(views)
            newest = latest_offsets_in(views, txns)
            result = CleanResult()
            cleaned = [batch for batch, _ in clean_batches(views[:count], newest, now_ms,
                                                           self.config.delete_retention_ms, result, txns)]
            if cleaned != self.batches[:count]:
                return CleanedRange(self.bases[0], self.lasts[count - 1] + 1, cleaned, result)
        # Nothing to rewrite: look again after an append, or when a kept tombstone's delete horizon or
        # the next batch's compaction lag has passed.
        recheck = [h.base_timestamp for h, _ in views[:count] if h.has_delete_horizon]
        if count < done:
            recheck.append(self.max_timestamps[count] + self.config.min_compaction_lag_ms + 1)
        self._clean_seen, self._clean_recheck_ms = self.committed, min(recheck, default=1 << 62)
        return None

    def replace_cleaned(self, cleaned: CleanedRange) -> None:
        """The clean committed in the database: the same batches in memory (appends only came after
        `cleaned.end`; a log start moved meanwhile still holds)."""
        keep = [b for i, b in enumerate(self.batches) if not cleaned.first <= self.bases[i] < cleaned.end]
        merged = sorted([*cleaned.batches, *keep], key=lambda b: BatchHeader.parse(b).base_offset)
        self.bases, self.lasts, self.max_timestamps, self.batches = [], [], [], []
        self.size_bytes = 0
        for batch in merged:
            self._keep(batch)
        self.move_start(self._log_start)


@dataclass
class CleanedRange:
    """What a clean of a led partition rewrites: the rows with base offsets in [first, end) become
    `batches` (each with its base offset kept where Kafka keeps it)."""

    first: int
    end: int
    batches: list[bytes]
    result: CleanResult


def leader_epoch_of(lease_epoch: int) -> int:
    """A lease epoch as the int32 leader epoch Metadata and batches carry."""
    return lease_epoch & 0x7FFFFFFF


@dataclass
class _Lead:
    """A partition lease this node holds (the coordinator shards' `Held`) and what it leads."""

    held: Held
    topic: str
    index: int


class ClusterDataPlane(DataPlane):
    """The data plane of a cluster node: topic partitions in PostgreSQL, led through leases."""

    def __init__(self, broker_config, data_dir, node_id: int) -> None:  # type: ignore[no-untyped-def]
        super().__init__(broker_config, data_dir)
        self.node_id = node_id
        self.store = PartitionBatchStore(node_id, self._write_failed)
        self.led: dict[str, _Lead] = {}  # shard -> this node's lease on it
        self.loaded: dict[str, PgPartition] = {}
        self.owners: dict[str, tuple[int, int]] = {}  # shard -> (node, epoch) of a live lease
        self.ownership: PartitionOwnership | None = None
        self.start_moves: dict[tuple[str, int], asyncio.Future[None]] = {}  # DeleteRecords' writes, per request
        self.share_state: ClusterShareState | None = None  # the led partitions' share-partitions (share_state.py)
        self._share_loaded: dict[str, list[Any]] = {}  # shard -> its share-state, read with it, installed with it
        self.loop = asyncio.get_running_loop()

    # ---- what the handlers ask

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        shard = shard_name(topic, index)
        lead = self.led.get(shard)
        if lead is None or self.loop.time() > lead.held.valid_until or shard not in self.loaded:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return None

    def leader_of(self, topic: str, index: int) -> tuple[int, int] | None:
        """(node, leader epoch) to name in Metadata, None while no fresh node holds the lease."""
        found = self.owners.get(shard_name(topic, index))
        if found is None or self.ownership is None:
            return None
        node, epoch = found
        if node != self.node_id and node not in self.ownership.cluster.fresh:
            return None
        return node, leader_epoch_of(epoch)

    def leader_epoch(self, topic: Topic, index: int) -> int:
        """The lease epoch this node leads the partition in, as Metadata reports it (stamped on batches)."""
        lead = self.led.get(shard_name(topic.name, index))
        return SINGLE_NODE_LEADER_EPOCH if lead is None else leader_epoch_of(lead.held.epoch)

    def durable_before_ack(self, acks: int) -> bool:
        return acks != 0  # one durable store: acks=1 waits for the commit as acks=all does

    def partition(self, topic: Topic, index: int) -> PgPartition:  # type: ignore[override]
        shard = shard_name(topic.name, index)
        if self.leader_error(topic.name, index) is not None:
            raise NotLeader(shard)
        return self.loaded[shard]

    def write_marker(self, topic: Topic, index: int, producer_id: int, producer_epoch: int,  # type: ignore[override]
                     commit: bool, coordinator_epoch: int, now_ms: int) -> PgPartition:
        """A transaction marker goes only into a partition this node leads; elsewhere it is retried (an
        OSError to the transaction coordinator's marker loop) until the partition is led here, as
        Kafka's marker channel retries until the leader takes it: markers are not sent between nodes."""
        if self.leader_error(topic.name, index) is not None:
            raise WriteLost(f"{shard_name(topic.name, index)} is not led by this node: marker not written")
        return super().write_marker(topic, index, producer_id, producer_epoch, commit,  # type: ignore[return-value]
                                    coordinator_epoch, now_ms)

    async def wait_durable(self, partition: PgPartition) -> None:  # type: ignore[override]
        await partition.durable()

    def apply_topic_config(self, topic: Topic) -> None:
        config = partition_config(self.config, topic)
        for partition in self.loaded.values():
            if partition.topic == topic.name:
                partition.config = config
                partition._clean_seen = -1  # a policy or lag changed: look again

    def delete_records(self, topic: Topic, index: int, offset: int) -> int:
        """DeleteRecords: the new log start, moved in the database by a statement under the lease that the
        answer waits for (`take_start_moves`), as the file store's answer waits for its checkpoint."""
        partition = self.partition(topic, index)
        if offset > partition.high_watermark:
            raise OffsetOutOfRangeError(offset, partition.log_start_offset, partition.high_watermark)
        if offset <= partition.log_start_offset or self.ownership is None:
            return partition.log_start_offset
        shard = shard_name(topic.name, index)
        self.start_moves[(topic.name, index)] = asyncio.ensure_future(self.ownership.move_start(shard, partition,
                                                                                                offset))
        return offset

    def take_start_moves(self) -> dict[tuple[str, int], asyncio.Future[None]]:
        moves, self.start_moves = self.start_moves, {}
        return moves

    def delete_topic(self, topic: str) -> None:
        """DeleteTopics on this node: the registry's notice unloaded the partitions (`unlead_topic`); the
        rows go too (the other nodes learn the deletion from gc_deleted_topics)."""
        self.unlead_topic(topic)
        if self.ownership is not None:
            self.ownership.delete_rows(topic)

    def unlead_topic(self, topic: str) -> None:
        """The topic is gone (deleted here or on another node): stop leading its partitions."""
        for shard, lead in list(self.led.items()):
            if lead.topic == topic:
                self._unload(shard)
                self.led.pop(shard, None)
                self.store.epochs.pop(shard, None)
        for key in [k for k in self.producers if k[0] == topic]:
            del self.producers[key]

    # ---- loading and dropping

    def _unload(self, shard: str) -> None:
        partition = self.loaded.pop(shard, None)
        if partition is not None:
            partition.failed = True
            self.producers.pop((partition.topic, partition.partition), None)
            if self.share_state is not None:
                self.share_state.unload(partition.topic, partition.partition)

    def _write_failed(self, shard: str) -> None:
        """A transaction of the partition failed (database, or fenced): what memory holds past the
        database's state is void. Reload while the lease holds; a fenced lease is gone already."""
        self._unload(shard)
        lead = self.led.get(shard)
        if lead is not None and shard in self.store.epochs and self.ownership is not None:
            self.ownership.start_load(shard, lead)

    async def load(self, shard: str, topic: Topic, index: int) -> PgPartition:
        async with self.store.pool.acquire() as conn:
            next_offset = await conn.fetchval("SELECT next_offset FROM gc_leases WHERE shard = $1", shard)
            log_start = await conn.fetchval("SELECT log_start FROM gc_log_starts WHERE shard = $1", shard) or 0
            rows = await conn.fetch("SELECT batch FROM gc_batches WHERE shard = $1 AND base_offset + record_count > $2 "
                                    "ORDER BY base_offset", shard, log_start)
        if self.share_state is not None:
            self._share_loaded[shard] = await self.share_state.read_state(shard)
        return PgPartition(topic.name, index, partition_config(self.config, topic), int(log_start),
                           int(next_offset or 0), (bytes(row["batch"]) for row in rows), self.store,
                           self.appended.notify)

    def install(self, shard: str, partition: PgPartition) -> None:
        self.producers.pop((partition.topic, partition.partition), None)  # rebuilt from the batches on use
        if self.share_state is not None:
            self.share_state.install(partition.topic, partition.partition, self._share_loaded.pop(shard, []))
        self.loaded[shard] = partition

    async def close(self) -> None:
        if self.share_state is not None:
            await self.share_state.close()
        await self.store.close()
        await super().close()


class PartitionOwnership:
    """This node's leases on topic partitions: claimed, renewed, handed over like the coordinator shards'."""

    def __init__(self, cluster: Cluster, data: ClusterDataPlane, topics: TopicRegistry) -> None:
        self.cluster = cluster
        self.data = data
        self.topics = topics
        self.node_id = cluster.node_id
        self.lease_ms = cluster.lease_ms
        self.renew_s = cluster.renew_s
        self.loop = asyncio.get_running_loop()
        self._rows: set[str] = set()  # shards whose lease row this node knows exists
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._wake = asyncio.Event()
        self._deleting: set[asyncio.Task[None]] = set()
        data.ownership = self
        data.store.on_fenced = lambda shard: self._drop(shard, "fenced")

    def _shards(self) -> dict[str, tuple[Topic, int]]:
        return {shard_name(t.name, i): (t, i) for t in self.topics if not t.internal for i in range(t.partitions)}

    async def start(self) -> None:
        self.data.store.pool = self.cluster.pool
        self.data.store.start()
        self.topics.on_change(self._topic_changed)
        await self._round()
        self._task = asyncio.ensure_future(self._run())

    def _topic_changed(self, change: TopicChange) -> None:
        if change.kind == "deleted":
            self.data.unlead_topic(change.name)
            self._rows = {shard for shard in self._rows if shard.rsplit("-", 1)[0] != change.name}
        else:
            self._wake.set()  # claim the new partitions now rather than a renewal period later

    async def _run(self) -> None:
        while not self._stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.renew_s)
            self._wake.clear()
            try:
                await self._round()
                await self._retain()
                await self._compact()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is unreachable: leases lapse locally, retried next round
                log.warning("partition_round_failed", error=repr(exc))

    async def _round(self) -> None:
        shards = self._shards()
        sent = self.loop.time()
        local_lease = self.lease_ms / 1000 * LOCAL_LEASE_FRACTION
        mine = list(self.data.led)
        pool = self.cluster.pool
        async with pool.acquire() as conn, conn.transaction():
            missing = [shard for shard in shards if shard not in self._rows]
            if missing:
                await conn.execute("INSERT INTO gc_leases (shard) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                                   sorted(missing))
                self._rows.update(missing)
            renewed = {row["shard"] for row in await conn.fetch(
                _RENEW, self.node_id, self.lease_ms, mine, [self.data.led[s].held.epoch for s in mine])}
            leases = await conn.fetch(_LEASES, list(shards))
            nodes = await conn.fetch(_NODES, SETTLE_LEASES * self.lease_ms, STALE_HEARTBEATS * self.renew_s * 1000)
            for shard in mine:
                lead = self.data.led.get(shard)
                if lead is None:
                    continue
                if shard in renewed:
                    lead.held.valid_until = sent + local_lease
                else:
                    self._drop(shard, "expired")
            owners = {row["shard"]: (int(row["owner"]), int(row["epoch"])) for row in leases
                      if row["live"] and row["owner"] is not None}
            live = [row["node_id"] for row in nodes]
            settled = [row["node_id"] for row in nodes if row["settled"]]
            wanted = [shard for shard in shards if shard not in owners
                      and preferred_owner(live, shard) == self.node_id]
            if wanted and not self._stopping:
                claim_sent = self.loop.time()
                for row in await conn.fetch(_CLAIM, self.node_id, self.lease_ms, sorted(wanted)):
                    shard = row["shard"]
                    topic, index = shards[shard]
                    lead = self.data.led[shard] = _Lead(Held(int(row["epoch"]), claim_sent + local_lease),
                                                        topic.name, index)
                    self.data.store.epochs[shard] = lead.held.epoch
                    owners[shard] = (self.node_id, lead.held.epoch)
                    self.cluster.lease_changes.inc(change="gained")
                    log.info("partition_lease_gained", shard=shard, epoch=lead.held.epoch)
                    self.start_load(shard, lead)
        self.data.owners = owners
        if self._stopping or self.node_id not in settled:
            return
        for shard, lead in list(self.data.led.items()):
            preferred = preferred_owner(settled, shard)
            if lead.held.loaded and preferred is not None and preferred != self.node_id:
                await self._hand_over(shard, lead, to=preferred)

    def start_load(self, shard: str, lead: _Lead) -> None:
        lead.held.loaded = False
        if lead.held.load is not None and not lead.held.load.done():
            return
        lead.held.load = asyncio.ensure_future(self._load(shard, lead))

    async def _load(self, shard: str, lead: _Lead) -> None:
        started = time.perf_counter()
        topic = self.topics.get(lead.topic)
        try:
            if topic is None:
                raise LookupError(f"topic {lead.topic} is gone")
            partition = await self.data.load(shard, topic, lead.index)
        except Exception as exc:  # let the lease lapse so that a node that can load takes it
            log.warning("partition_load_failed", shard=shard, error=repr(exc))
            self._drop(shard, "load_failed")
            return
        if self.data.led.get(shard) is not lead:  # lost while loading
            return
        self.data.install(shard, partition)
        lead.held.loaded = True
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.cluster.load_time.observe(elapsed_ms)
        log.info("partition_loaded", shard=shard, epoch=lead.held.epoch, batches=len(partition.batches),
                 high_watermark=partition.high_watermark, ms=round(elapsed_ms, 1))

    def _drop(self, shard: str, why: str) -> None:
        lead = self.data.led.pop(shard, None)
        if lead is None:
            return
        self.data.store.epochs.pop(shard, None)
        if lead.held.load is not None and not lead.held.load.done():
            lead.held.load.cancel()
        self.data._unload(shard)
        self.cluster.lease_changes.inc(change="lost")
        log.warning("partition_lease_lost", shard=shard, epoch=lead.held.epoch, reason=why)

    async def _hand_over(self, shard: str, lead: _Lead, to: int | None) -> None:
        """Stop leading, let the last write finish, then free the lease for the next leader at once."""
        partition = self.data.loaded.get(shard)
        del self.data.led[shard]
        self.data._unload(shard)
        if partition is not None and partition.last_write is not None:
            await asyncio.wait([partition.last_write], timeout=STATEMENT_TIMEOUT_S)
        async with self.cluster.pool.acquire() as conn:
            await conn.execute(_RELEASE, shard, self.node_id, lead.held.epoch)
        self.data.store.epochs.pop(shard, None)
        self.data.owners.pop(shard, None)
        self.cluster.lease_changes.inc(change="handed_over")
        log.info("partition_lease_handed_over", shard=shard, epoch=lead.held.epoch, to=to)

    async def _retain(self) -> None:
        """Time and size retention of the led partitions, in the database first, under the lease."""
        now_ms = int(time.time() * 1000)
        for shard, partition in list(self.data.loaded.items()):
            start = partition.retained_start(now_ms)
            if start > partition.log_start_offset:
                await self.move_start(shard, partition, start)
                log.info("partition_retention", shard=shard, log_start=start)

    async def _compact(self) -> None:
        """Compaction of the led compacted partitions, in the database first, under the lease."""
        now_ms = int(time.time() * 1000)
        for shard, partition in list(self.data.loaded.items()):
            cleaned = partition.cleanable(now_ms)
            if cleaned is not None:
                await self.clean(shard, partition, cleaned)

    async def clean(self, shard: str, partition: PgPartition, cleaned: CleanedRange) -> None:
        """Rewrite a cleaned range in one transaction that checks the lease's epoch (WriteLost if it was
        lost), then in memory."""
        headers = [BatchHeader.parse(b) for b in cleaned.batches]
        # A statement's CTEs see the table as it was, so the DELETE and the INSERT of a batch that kept
        # its base offset would clash on the key: two statements, in one transaction.
        async with self.cluster.pool.acquire() as conn, conn.transaction():
            held = await conn.fetch(_LOCK_LEASES, [shard], [self.data.store.epochs.get(shard, -1)], self.node_id)
            if not held:
                raise WriteLost(f"{shard}: lease lost, not compacted")
            await conn.execute("DELETE FROM gc_batches WHERE shard = $1 AND base_offset >= $2 AND base_offset < $3",
                               shard, cleaned.first, cleaned.end)
            await conn.executemany(
                "INSERT INTO gc_batches (shard, base_offset, record_count, batch) VALUES ($1, $2, $3, $4)",
                [(shard, h.base_offset, h.last_offset_delta + 1, b)
                 for h, b in zip(headers, cleaned.batches, strict=True)])
        if self.data.loaded.get(shard) is partition:
            partition.replace_cleaned(cleaned)
        r = cleaned.result
        log.info("partition_compacted", shard=shard, first=cleaned.first, end=cleaned.end,
                 records_kept=r.records_kept, records_removed=r.records_removed)

    async def move_start(self, shard: str, partition: PgPartition, offset: int) -> None:
        """The partition's log starts at `offset`: in the database first, under the lease (WriteLost if
        it was lost), then in memory."""
        async with self.cluster.pool.acquire() as conn:
            moved = await conn.fetch(_MOVE_START, [shard], [self.data.store.epochs.get(shard, -1)], self.node_id,
                                     offset)
        if not moved:
            raise WriteLost(f"{shard}: lease lost, log start not moved")
        if self.data.loaded.get(shard) is partition:
            partition.move_start(offset)

    def delete_rows(self, topic: str) -> None:
        """A topic deleted on this node: its partitions' rows go (batches, leases, log starts), in the
        background; a leader elsewhere finds its lease gone (its appends are refused, its renewal fails)."""
        task = asyncio.ensure_future(self._delete_rows(topic))
        self._deleting.add(task)
        task.add_done_callback(self._deleting.discard)

    async def _delete_rows(self, topic: str) -> None:
        prefix = topic + "-"
        try:
            async with self.cluster.pool.acquire() as conn, conn.transaction():
                for table in ("gc_batches", "gc_leases", "gc_log_starts"):
                    await conn.execute(f"DELETE FROM {table} WHERE left(shard, length($1)) = $1 "
                                       f"AND substr(shard, length($1) + 1) ~ '^[0-9]+$'", prefix)
                await conn.execute("DELETE FROM gc_batches WHERE left(shard, length($1)) = $1 "  # its share-state
                                   "AND substr(shard, length($1) + 1) ~ '^[0-9]+$'", share_shard(prefix))
        except Exception as exc:
            log.warning("partition_rows_not_deleted", topic=topic, error=repr(exc))

    async def close(self) -> None:
        """A clean shutdown: queued appends committed, then every lease handed over at once."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
        if self.data.share_state is not None:  # share-state queued so far written before the leases go
            await self.data.share_state.close()
        await self.data.store.close()
        try:
            for shard, lead in list(self.data.led.items()):
                await self._hand_over(shard, lead, to=None)
        except Exception as exc:  # the database is gone: the leases expire by themselves
            log.warning("partition_handover_failed", error=repr(exc))
