"""Which node serves which coordinator shard: leases with epochs in PostgreSQL.

Every `cluster.lease.renew.ms` each node, in one transaction judged by the database's clock
(`now()`): refreshes its row in `gc_nodes` (its heartbeat), renews the leases it holds (only those
still carrying the epoch it claimed them with and not yet expired), and reads every lease and every
live node. Then it

- drops the shards whose lease it lost (unloaded at once: parked requests get NOT_COORDINATOR);
- claims free or expired leases of the shards it is preferred for, bumping their epoch (the fence:
  appends carry the epoch and are refused under any other), and loads them (replayed from the
  store: groups keep their generations and member epochs, so a move causes no rebalance); until a
  shard is loaded its requests get COORDINATOR_LOAD_IN_PROGRESS;
- hands over shards that another settled node is now preferred for (clean shutdown: all of them).

The preferred owner of a shard is the live node with the highest hash of (node id, shard):
rendezvous hashing, so a node joining or leaving moves only the shards it gains or held.

Between renewals a node serves a shard only while its local monotonic clock says the lease, counted
from the moment the renewal was sent, has not run out (a slightly shorter span than the database
gives it): a paused node wakes up to find its leases gone before it answers anything from memory,
and its writes are refused by the epoch check whatever it believes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.cluster.schema import migrate
from coordinator.cluster.store import COMPACT_AFTER_BATCHES, BatchStore, PgRecordStore, offsets_shard
from coordinator.config import Config
from coordinator.metrics.server_metrics import ServerMetrics
from coordinator.server.registry import HandlerError
from coordinator.topics import Topic, TopicChange, TopicError, TopicRegistry
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.server.groups import GroupRuntime

log = structlog.get_logger()

# The local view of a lease lasts this fraction of the lease: room for the two clocks' rates to differ.
LOCAL_LEASE_FRACTION = 0.9
# A node must have been live this many leases before shards are handed over to it (damps churn
# while a node restarts, or after a pause).
SETTLE_LEASES = 2
# A node that missed this many heartbeats is probably dead: its leases still hold, but FindCoordinator
# sends no client to it (COORDINATOR_NOT_AVAILABLE, retried) rather than into a refused connection,
# whose reconnect backoff (librdkafka doubles it up to 10 s) would outlast the lease.
STALE_HEARTBEATS = 3
# How long a statement may take before the node treats the database as unreachable (seconds).
STATEMENT_TIMEOUT_S = 5.0

_ROUND = """
    WITH node AS (
        INSERT INTO gc_nodes AS n (node_id, host, port, started_at, heartbeat_at, expires_at)
        VALUES ($1, $2, $3, now(), now(), now() + $4 * interval '1 millisecond')
        ON CONFLICT (node_id) DO UPDATE SET host = excluded.host, port = excluded.port, heartbeat_at = now(),
            started_at = CASE WHEN n.expires_at <= now() THEN now() ELSE n.started_at END,
            expires_at = excluded.expires_at
        RETURNING node_id)
    UPDATE gc_leases l SET expires_at = now() + $4 * interval '1 millisecond'
    FROM (SELECT g.shard FROM gc_leases g
          JOIN unnest($5::text[], $6::bigint[]) AS held(shard, epoch) ON g.shard = held.shard AND g.epoch = held.epoch
          WHERE g.owner = $1 AND g.expires_at > now()
          ORDER BY g.shard FOR UPDATE OF g) AS mine
    WHERE l.shard = mine.shard
    RETURNING l.shard"""
_LEASES = """
    SELECT shard, owner, epoch, expires_at > now() AS live FROM gc_leases"""
_NODES = """
    SELECT node_id, host, port, started_at < now() - $1 * interval '1 millisecond' AS settled,
           heartbeat_at > now() - $2 * interval '1 millisecond' AS fresh
    FROM gc_nodes WHERE expires_at > now() ORDER BY node_id"""
_CLAIM = """
    UPDATE gc_leases SET owner = $1, epoch = epoch + 1, expires_at = now() + $2 * interval '1 millisecond',
        changed_at = now()
    WHERE shard = ANY($3::text[]) AND (owner IS NULL OR expires_at <= now())
    RETURNING shard, epoch"""
_RELEASE = """
    UPDATE gc_leases SET owner = NULL, expires_at = '-infinity', changed_at = now()
    WHERE shard = $1 AND owner = $2 AND epoch = $3"""


def preference(node_id: int, shard: str) -> bytes:
    """Rendezvous hashing: the live node with the highest value is the shard's preferred owner."""
    return hashlib.blake2b(f"{node_id}/{shard}".encode(), digest_size=8).digest()


def preferred_owner(nodes: list[int], shard: str) -> int | None:
    return max(nodes, key=lambda node: preference(node, shard), default=None)


@dataclass
class Held:
    epoch: int
    valid_until: float  # monotonic seconds: past this, the lease is not trusted locally
    loaded: bool = False
    load: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass(frozen=True)
class NodeInfo:
    node_id: int
    host: str
    port: int


class Cluster:
    """This node's side of the cluster: its leases, the shards it serves, the routing view."""

    def __init__(self, config: Config, node_id: int, host: str, port: int, runtime: GroupRuntime,
                 store: PgRecordStore, metrics: ServerMetrics, cluster_id: str,
                 topics: TopicRegistry | None = None) -> None:
        self.url: str = config["coordinator.store.url"]
        self.lease_ms: int = config["cluster.lease.ms"]
        self.renew_s: float = config["cluster.lease.renew.ms"] / 1000
        self.num_partitions: int = config["offsets.topic.num.partitions"]
        self.node_id, self.host, self.port = node_id, host, port
        self.runtime = runtime
        self.store = store
        self.batches: BatchStore = store.batches
        self.batches.on_fenced = self._fenced
        self.held: dict[int, Held] = {}  # partition -> this node's lease on it
        self.owners: dict[int, int] = {}  # partition -> node holding a live lease (the routing view)
        self.nodes: dict[int, NodeInfo] = {}  # live nodes
        self.fresh: set[int] = set()  # live nodes whose last heartbeat is recent (STALE_HEARTBEATS)
        self.pool: Any = None
        self.topics = topics  # this node's topic registry, kept in step with gc_topics
        self.cluster_id = cluster_id  # the first node's proposal; every node takes the one stored
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self._topics_lock = asyncio.Lock()  # one exchange with gc_topics at a time (rounds, creations, misses)
        self._learning = False  # creating topics read from gc_topics: nothing to publish back
        self._publishing: set[asyncio.Task[None]] = set()
        # Topics created or deleted on this node since they were last published: a creation lifts an
        # earlier deletion's tombstone (gc_deleted_topics), a deletion leaves one for the other nodes.
        self._created_here: set[str] = set()
        self._deleted_here: set[str] = set()
        self.loop = asyncio.get_running_loop()
        r = metrics.registry
        self.lease_changes = r.counter("groupcoord_cluster_lease_changes",
                                       "Coordinator shard leases gained, lost or handed over by this node")
        self.load_time = r.timer("groupcoord_cluster_shard_load_ms", "Time to load a shard won with its lease")
        r.gauge("groupcoord_cluster_shards_served", "Coordinator shards this node serves",
                lambda: {(): float(sum(1 for h in self.held.values() if h.loaded))})
        r.gauge("groupcoord_cluster_live_nodes", "Live nodes in the cluster", lambda: {(): float(len(self.nodes))})

    # ---- the runtime's gate (coordinator.server.groups.ShardGate)

    def check(self, partition: int) -> None:
        held = self.held.get(partition)
        if held is None or self.loop.time() > held.valid_until:
            raise HandlerError(ErrorCode.NOT_COORDINATOR)
        if not held.loaded:
            raise HandlerError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    def serves(self, partition: int) -> bool:
        held = self.held.get(partition)
        return held is not None and held.loaded and self.loop.time() <= held.valid_until

    def write_failed(self, partition: int) -> None:
        """The shard was unloaded after a failed append. Fenced: the lease is gone (dropped now).
        Otherwise (the database failed) reload it while the lease holds; the next round decides."""
        held = self.held.get(partition)
        if held is None:
            return
        held.loaded = False
        self._start_load(partition, held)

    def _fenced(self, shard: str) -> None:
        for partition, held in list(self.held.items()):
            if offsets_shard(partition) == shard:
                self._drop(partition, held, "fenced")

    # ---- routing

    def owner_of(self, partition: int) -> NodeInfo | None:
        """The node to send the partition's clients to: its lease holder, unless that node has missed
        its recent heartbeats (None: no coordinator to name now)."""
        node = self.owners.get(partition)
        if node is None or (node != self.node_id and node not in self.fresh):
            return None
        return self.nodes.get(node)

    def live_nodes(self) -> list[NodeInfo]:
        return list(self.nodes.values())

    # ---- lifecycle

    async def start(self) -> None:
        import asyncpg  # the `cluster` extra: only a node with a PostgreSQL store needs it

        # Connecting is bounded like statements: with the database down, a write or a renewal fails
        # within seconds (retriable errors for clients) instead of waiting out a 60 s connect timeout.
        self.pool = await asyncpg.create_pool(self.url, min_size=2, max_size=4, timeout=STATEMENT_TIMEOUT_S,
                                              command_timeout=STATEMENT_TIMEOUT_S)
        async with self.pool.acquire() as conn:
            await migrate(conn)
            await conn.execute("INSERT INTO gc_cluster (id) VALUES ($1) ON CONFLICT DO NOTHING", self.cluster_id)
            self.cluster_id = await conn.fetchval("SELECT id FROM gc_cluster")
            await conn.execute("INSERT INTO gc_leases (shard) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                               [offsets_shard(p) for p in range(self.num_partitions)])
        self.batches.pool = self.pool
        self.batches.start()
        self.runtime.gate = self
        if self.topics is not None:
            self.topics.on_change(self._topic_changed)
        await self._round()
        await self.sync_topics()
        self._loop_task = asyncio.ensure_future(self._run())
        log.info("cluster_joined", node_id=self.node_id, shards=len(self.held), live_nodes=sorted(self.nodes))

    async def _run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.renew_s)
            try:
                await self._round()
                await self.sync_topics()
                await self._compact_some()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is unreachable: leases lapse locally, retried next round
                log.warning("cluster_round_failed", error=repr(exc))

    async def _round(self) -> None:
        sent = self.loop.time()
        local_lease = self.lease_ms / 1000 * LOCAL_LEASE_FRACTION
        partitions = list(self.held)
        async with self.pool.acquire() as conn:
            async with conn.transaction():
                renewed = {row["shard"] for row in await conn.fetch(
                    _ROUND, self.node_id, self.host, self.port, self.lease_ms,
                    [offsets_shard(p) for p in partitions], [self.held[p].epoch for p in partitions])}
                leases = await conn.fetch(_LEASES)
                nodes = await conn.fetch(_NODES, SETTLE_LEASES * self.lease_ms,
                                         STALE_HEARTBEATS * self.renew_s * 1000)
            self.nodes = {row["node_id"]: NodeInfo(row["node_id"], row["host"], row["port"]) for row in nodes}
            self.fresh = {row["node_id"] for row in nodes if row["fresh"]}
            for partition in partitions:
                held = self.held.get(partition)
                if held is None:
                    continue
                if offsets_shard(partition) in renewed:
                    held.valid_until = sent + local_lease
                else:
                    self._drop(partition, held, "expired")
            by_shard = {row["shard"]: row for row in leases}
            self.owners = {}
            for partition in range(self.num_partitions):
                row = by_shard.get(offsets_shard(partition))
                if row is not None and row["live"] and row["owner"] is not None:
                    self.owners[partition] = row["owner"]
            if self._stopping:
                return
            live = [row["node_id"] for row in nodes]
            settled = [row["node_id"] for row in nodes if row["settled"]]
            wanted = [offsets_shard(p) for p in range(self.num_partitions)
                      if p not in self.owners and preferred_owner(live, offsets_shard(p)) == self.node_id]
            if wanted:
                claim_sent = self.loop.time()
                for row in await conn.fetch(_CLAIM, self.node_id, self.lease_ms, wanted):
                    partition = int(row["shard"].rsplit("-", 1)[1])
                    held = self.held[partition] = Held(int(row["epoch"]), claim_sent + local_lease)
                    self.batches.epochs[row["shard"]] = held.epoch
                    self.owners[partition] = self.node_id
                    self.lease_changes.inc(change="gained")
                    log.info("cluster_lease_gained", partition=partition, epoch=held.epoch)
                    self._start_load(partition, held)
        for partition, held in list(self.held.items()):
            preferred = preferred_owner(settled, offsets_shard(partition))
            if held.loaded and preferred is not None and preferred != self.node_id and self.node_id in settled:
                await self._hand_over(partition, held, to=preferred)

    async def sync_topics(self) -> None:
        """Topics created on any node reach every node: this node's new topics go into gc_topics (the
        first node to write a name wins), and the table's topics this node lacks are created here, with
        the same id (derived from the name). Partitions added on a node reach the others the same way; a
        topic deleted on a node leaves a tombstone (gc_deleted_topics) from which the others delete it,
        until a node creates the name again.

        Run every round, and also at once where waiting for the round would give a wrong answer: a
        CreateTopics answers only once its topics are in the table, and a node about to answer
        UNKNOWN_TOPIC_OR_PARTITION reads the table first (the topic may be a moment old, made on another node)."""
        if self.topics is None:
            return
        async with self._topics_lock:
            await self._sync_topics()

    def _topic_changed(self, change: TopicChange) -> None:
        """A topic made, grown or deleted on this node (CreateTopics, a Metadata request, CreatePartitions,
        DeleteTopics) goes into gc_topics at once rather than at the next round."""
        if self._learning or self._stopping:
            return
        if change.kind == "created":
            self._deleted_here.discard(change.name)
            self._created_here.add(change.name)
        elif change.kind == "deleted":
            self._created_here.discard(change.name)
            self._deleted_here.add(change.name)
        task = asyncio.ensure_future(self.sync_topics())
        self._publishing.add(task)
        task.add_done_callback(self._published)

    def _published(self, task: asyncio.Task[None]) -> None:
        self._publishing.discard(task)
        if not task.cancelled() and task.exception() is not None:  # the next round publishes it
            log.warning("cluster_topic_publish_failed", error=repr(task.exception()))

    async def _sync_topics(self) -> None:
        assert self.topics is not None
        local = {topic.name: topic for topic in self.topics if not topic.internal}
        created, deleted = set(self._created_here), set(self._deleted_here)
        async with self.pool.acquire() as conn, conn.transaction():
            if deleted:
                await conn.execute("DELETE FROM gc_topics WHERE name = ANY($1::text[])", sorted(deleted))
                await conn.execute("INSERT INTO gc_deleted_topics (name) SELECT unnest($1::text[]) "
                                   "ON CONFLICT (name) DO UPDATE SET deleted_at = now()", sorted(deleted))
            if created:
                await conn.execute("DELETE FROM gc_deleted_topics WHERE name = ANY($1::text[])", sorted(created))
            tombstones = {row["name"] for row in await conn.fetch("SELECT name FROM gc_deleted_topics")}
            shared = {row["name"]: row for row in await conn.fetch("SELECT name, partitions, configs FROM gc_topics")}
            new = [topic for name, topic in local.items() if name not in shared and name not in tombstones]
            if new:
                await conn.execute(
                    "INSERT INTO gc_topics (name, partitions, configs) "
                    "SELECT * FROM unnest($1::text[], $2::integer[], $3::jsonb[]) ON CONFLICT DO NOTHING",
                    [t.name for t in new], [t.partitions for t in new], [json.dumps(t.configs) for t in new])
            grown = [t for name, t in local.items() if name in shared and t.partitions > shared[name]["partitions"]]
            if grown:  # CreatePartitions on this node: the others grow the topic too
                await conn.execute(
                    "UPDATE gc_topics t SET partitions = greatest(t.partitions, g.partitions) "
                    "FROM unnest($1::text[], $2::integer[]) AS g(name, partitions) WHERE t.name = g.name",
                    [t.name for t in grown], [t.partitions for t in grown])
        self._created_here -= created
        self._deleted_here -= deleted
        self._learning = True
        try:
            self._learn_topics(local, shared, tombstones)
        finally:
            self._learning = False

    def _learn_topics(self, local: dict[str, Topic], shared: dict[str, Any], tombstones: set[str]) -> None:
        """What other nodes did to the topics: created, grown (CreatePartitions) or deleted."""
        assert self.topics is not None
        for name, row in shared.items():
            topic = local.get(name)
            try:
                if topic is None:
                    self.topics.create(name, int(row["partitions"]), json.loads(row["configs"]))
                    log.info("cluster_topic_learnt", topic=name, partitions=row["partitions"])
                elif int(row["partitions"]) > topic.partitions:
                    self.topics.add_partitions(name, int(row["partitions"]))
                    log.info("cluster_topic_grown", topic=name, partitions=row["partitions"])
            except TopicError as exc:  # not a name this node accepts: leave it out, say so
                log.warning("cluster_topic_not_created", topic=name, error=str(exc))
        for name in local.keys() - shared.keys():
            if name in tombstones and name not in self._created_here:
                self.topics.delete(name)
                log.info("cluster_topic_deleted", topic=name)

    def _start_load(self, partition: int, held: Held) -> None:
        if held.load is not None and not held.load.done():
            return
        held.load = asyncio.ensure_future(self._load(partition, held))

    async def _load(self, partition: int, held: Held) -> None:
        started = time.perf_counter()
        try:
            records = await self.store.load(partition)
        except Exception as exc:  # the database failed: let the lease lapse so a node that can load takes it
            log.warning("cluster_load_failed", partition=partition, error=repr(exc))
            self._drop(partition, held, "load_failed")
            return
        if self.held.get(partition) is not held:  # lost while loading
            return
        count = self.runtime.install(partition, records)
        held.loaded = True
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.load_time.observe(elapsed_ms)
        log.info("cluster_shard_loaded", partition=partition, epoch=held.epoch, records=count,
                 ms=round(elapsed_ms, 1))

    def _drop(self, partition: int, held: Held, why: str) -> None:
        if self.held.get(partition) is not held:
            return
        del self.held[partition]
        self.batches.epochs.pop(offsets_shard(partition), None)
        if held.load is not None and not held.load.done():
            held.load.cancel()
        self.runtime.unload(partition)
        if self.owners.get(partition) == self.node_id:
            del self.owners[partition]
        self.lease_changes.inc(change="lost")
        log.warning("cluster_lease_lost", partition=partition, epoch=held.epoch, reason=why)

    async def _hand_over(self, partition: int, held: Held, to: int | None) -> None:
        """Stop serving, let the last write finish, then free the lease for the next owner at once."""
        del self.held[partition]
        self.runtime.unload(partition)
        pending = self.runtime.pending_write(partition)
        if pending is not None:
            await asyncio.wait([pending], timeout=STATEMENT_TIMEOUT_S)
        async with self.pool.acquire() as conn:
            await conn.execute(_RELEASE, offsets_shard(partition), self.node_id, held.epoch)
        self.batches.epochs.pop(offsets_shard(partition), None)
        self.owners.pop(partition, None)
        self.lease_changes.inc(change="handed_over")
        log.info("cluster_lease_handed_over", partition=partition, epoch=held.epoch, to=to)

    async def _compact_some(self) -> None:
        """Compact at most one shard a round: the one with the most batches appended since."""
        served = [(count, shard) for shard, count in self.batches.appended_batches.items()
                  if shard in self.batches.epochs]
        if not served:
            return
        count, shard = max(served)
        if count >= COMPACT_AFTER_BATCHES:
            await self.batches.compact(shard)

    async def close(self) -> None:
        """A clean shutdown: every lease handed over at once, the node row expired."""
        self._stopping = True
        if self._loop_task is not None:
            self._loop_task.cancel()
        for task in list(self._publishing):
            task.cancel()
        if self.pool is None:
            return
        await self.batches.close()
        try:
            for partition, held in list(self.held.items()):
                await self._hand_over(partition, held, to=None)
            async with self.pool.acquire() as conn:
                await conn.execute("UPDATE gc_nodes SET expires_at = now() WHERE node_id = $1", self.node_id)
        except Exception as exc:  # the database is gone: the leases expire by themselves
            log.warning("cluster_handover_failed", error=repr(exc))
        try:
            await asyncio.wait_for(self.pool.close(), STATEMENT_TIMEOUT_S)
        except TimeoutError:
            self.pool.terminate()
