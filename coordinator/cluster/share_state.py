"""Share-partition state in PostgreSQL, kept by the topic partition's leader under its lease.

In Kafka the share-partition (in-flight record states, acquisition locks) lives on the topic
partition's leader, and its durable state goes through the share coordinator to
`__share_group_state`. Here the leader of `T-N` keeps the share-partitions of every group on `T-N`
(`SharePartitionManager`), and their durable state is `__share_group_state` ShareSnapshot records
(Kafka's record format) in a record batch of `gc_batches` under the shard
`__share_group_state:T-N`, written under the data partition's own lease: the transaction that writes
it locks `T-N`'s lease row and checks owner, epoch and expiry first, so a node that lost the
partition can never write its share-state again, and a new leader loads it with the partition.

Why under the data partition's lease rather than shards of their own leased like the transaction
log's: the state is only ever changed by the partition's leader, so a second lease would have to
follow the first one exactly (the same node, moved at the same time) — one lease is that by
construction, and no share-state write can outlive the leadership it was computed under.

Each write replaces the partition's whole share-state (a snapshot of every group's share-partition
on it) in one transaction, so the stored log is compacted as it is written: one batch per partition.
Writes are serialized by one writer task that builds the snapshots when it commits, so a later
state never loses to an earlier one, and every `persist` waiting is answered by the commit after it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.cluster.store import _LOCK_LEASES, BatchStore, Fenced, StoreUnavailable, _Pending, shard_name
from coordinator.log.batch import iter_records
from coordinator.records.share_state import SHARE_STATE_TOPIC, ShareStateRecord, decode_share_state
from coordinator.server.log_record_store import coordinator_batch
from coordinator.server.share_partitions import _all_of

if TYPE_CHECKING:
    from coordinator.cluster.partitions import ClusterDataPlane
    from coordinator.server.share_partitions import PartitionKey, SharePartitionManager

log = structlog.get_logger()


def share_shard(data_shard: str) -> str:
    """The share-state shard of a data partition (':' is not allowed in topic names: no clash)."""
    return f"{SHARE_STATE_TOPIC}:{data_shard}"


class ClusterShareState(BatchStore):
    """The share-partitions' durable state of the partitions this node leads: the coordinator shards'
    serial, group-committing writer (`BatchStore`), whose queued items here name a data partition whose
    share-state is to be written as it is when the transaction starts."""

    def __init__(self, manager: SharePartitionManager, data: ClusterDataPlane) -> None:
        super().__init__(None, data.node_id)
        self.manager = manager
        self.data = data
        manager.cluster_state = self
        data.share_state = self

    # ---- writes

    def persist(self, keys: set[PartitionKey]) -> asyncio.Future[None] | None:
        """Snapshots of the partitions of `keys` (whole partitions: every group on them), committed
        under each partition's lease; the future fails (an OSError) if a lease was lost or the write failed."""
        shards: set[str] = set()
        for _, topic_id, index in keys:
            topic = self.manager.broker.topics.by_id(topic_id)
            if topic is not None:
                shards.add(shard_name(topic.name, index))
        if not shards:
            return None
        self.start()
        writes = []
        for shard in sorted(shards):
            done = self.append(shard, b"", 0)
            done.add_done_callback(_observed)  # fire-and-forget persists (lock expiry, session close) too
            if self._closing:  # the writer has stopped: the leases are being handed over with what was written
                done.set_exception(StoreUnavailable("shutting down: share-state not written"))
            writes.append(done)
        combined = _all_of(writes)
        combined.add_done_callback(_observed)
        return combined

    def _snapshot_batch(self, data_shard: str) -> tuple[int, bytes] | None:
        """The partition's share-state now: one snapshot record per group's share-partition."""
        topic_name, index = data_shard.rsplit("-", 1)
        topic = self.manager.broker.topics.get(topic_name)
        if topic is None:
            return None
        now = int(time.time() * 1000)
        keys = sorted((k for k in self.manager.partitions if k[1] == topic.topic_id and k[2] == int(index)), key=str)
        records = [self.manager.snapshot_of(key, now) for key in keys]
        if not records:
            return None
        return len(records), coordinator_batch(records, now)

    async def _commit(self, pending: list[_Pending]) -> None:
        # Only partitions served here now: one being (re)loaded has no share-partitions in memory, and
        # writing that emptiness would erase the state the load is about to install.
        shards = sorted({shard for shard, _, _, _ in pending if shard in self.data.loaded})
        epochs = [self.data.store.epochs.get(shard, -1) for shard in shards]
        batches = {shard: self._snapshot_batch(shard) for shard in shards}
        try:
            async with self.data.store.pool.acquire() as conn, conn.transaction():
                held = [row["shard"] for row in await conn.fetch(_LOCK_LEASES, shards, epochs, self.data.node_id)]
                await conn.execute("DELETE FROM gc_batches WHERE shard = ANY($1::text[])",
                                   [share_shard(s) for s in held])
                rows = [(share_shard(s), 0, found[0], found[1]) for s in held if (found := batches[s]) is not None]
                if rows:
                    await conn.executemany("INSERT INTO gc_batches (shard, base_offset, record_count, batch) "
                                           "VALUES ($1, $2, $3, $4)", rows)
        except Exception as exc:  # the outcome is unknown: nothing waiting on it is answered as durable
            log.warning("share_state_write_failed", shards=shards, error=repr(exc))
            failure = StoreUnavailable(f"PostgreSQL write of share-state failed: {exc!r}")
            for _, _, _, done in pending:
                if not done.done():
                    done.set_exception(failure)
            return
        fenced = {shard for shard, _, _, _ in pending} - set(held)
        for shard, _, _, done in pending:
            if done.done():
                continue
            if shard in fenced:
                done.set_exception(Fenced(f"lease on {shard} lost: share-state not written"))
            else:
                done.set_result(None)
        for shard in sorted(fenced):
            log.warning("share_state_write_fenced", shard=shard)

    # ---- loading with the partition, dropping with it

    async def read_state(self, data_shard: str) -> list[ShareStateRecord]:
        """The partition's share-state records, as its new leader loads them (before it serves it)."""
        async with self.data.store.pool.acquire() as conn:
            rows = await conn.fetch("SELECT batch FROM gc_batches WHERE shard = $1 ORDER BY base_offset",
                                    share_shard(data_shard))
        found: list[ShareStateRecord] = []
        for row in rows:
            for record in iter_records(bytes(row["batch"])):
                if record.key is None:
                    continue
                try:
                    found.append(decode_share_state(record.key, record.value))
                except ValueError:
                    continue  # another writer's record type
        return found

    def install(self, topic_name: str, index: int, records: list[ShareStateRecord]) -> None:
        """The partition is served from now on: its share-partitions as the database has them."""
        topic = self.manager.broker.topics.get(topic_name)
        if topic is None:
            return
        self.manager.forget_partition(topic.topic_id, index)
        for record in records:
            self.manager.apply_state(record)
        if records:
            log.info("share_state_loaded", topic=topic.name, partition=index, share_partitions=len(records))

    def unload(self, topic_name: str, index: int) -> None:
        """The partition is no longer led here: its share-partitions go (the next leader loads them)."""
        topic = self.manager.broker.topics.get(topic_name)
        if topic is not None:
            self.manager.forget_partition(topic.topic_id, index)


def _observed(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()  # retrieved: the waiter, if any, reports it; nobody else must
