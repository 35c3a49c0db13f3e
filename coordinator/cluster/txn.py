"""The transaction coordinator across a cluster: one coordinator per transactional id.

`__transaction_state` partitions are shards like the `__consumer_offsets` ones: each is owned by one
node at a time through a lease row with an epoch in `gc_leases` (same statements, same rendezvous
hash, same local lease span as coordinator/cluster/ownership.py), and its log is Kafka record
batches in `gc_batches`, every append fenced by the epoch. FindCoordinator (key type TRANSACTION)
names the owner of the transactional id's partition; the other nodes answer NOT_COORDINATOR.

On winning a partition the node reads its log back and replays it into the transaction coordinator,
then carries on as Kafka's TransactionStateManager does on load: the markers of every PrepareCommit /
PrepareAbort transaction are written and the transaction completed; Ongoing ones are aborted by the
timeout scan when their time is up. The lease epoch is the coordinator epoch of the markers.

Markers go to the owner of each partition of the transaction, as Kafka's
TransactionMarkerChannelManager sends WriteTxnMarkers to each partition's leader: a
`__consumer_offsets` partition's owner is its lease holder; a data partition's owner is what
`data_owner` says (None: this node, whose own log holds the partition's batches today).

Producer ids come in blocks from `gc_producer_ids` (Kafka's ProducerIdManager takes them from the
controller), so no two nodes hand out the same id; the next block is fetched when 90% of the
current one is used.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import structlog

from coordinator.cluster.ownership import (
    _CLAIM,
    _LEASES,
    _NODES,
    _RELEASE,
    _ROUND,
    LOCAL_LEASE_FRACTION,
    SETTLE_LEASES,
    STALE_HEARTBEATS,
    STATEMENT_TIMEOUT_S,
    Cluster,
    Held,
    NodeInfo,
    preferred_owner,
)
from coordinator.cluster.store import shard_name
from coordinator.records import Record
from coordinator.records.transactional import resolve
from coordinator.server.data_plane import PRODUCER_ID_BLOCK
from coordinator.topics import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.server.transactions import TxnService

log = structlog.get_logger()

TRANSACTION_STATE_TOPIC = "__transaction_state"
PREFETCH_AT = 0.9  # ProducerIdManager fetches the next block when this much of the current one is used
WRITE_TXN_MARKERS_VERSION = 1  # the flexible version every Kafka 4.x broker takes
ADD_PARTITIONS_VERSION = 5  # the broker form, with TRANSACTION_ABORTABLE
# A data partition's owner: the node whose log holds its batches (None: this node's own log).
DataOwner = Callable[[str, int], int | None]


def txn_shard(partition: int) -> str:
    return shard_name(TRANSACTION_STATE_TOPIC, partition)


def _partition_of(shard: str) -> int:
    return int(shard.rsplit("-", 1)[1])


class NoRoute(OSError):
    """No live node owns the partition a marker is for now: retried, as Kafka's marker channel waits
    for the partition's leader."""


class TxnShards:
    """This node's `__transaction_state` partitions: their leases, their logs, the routing of markers."""

    def __init__(self, cluster: Cluster, txn: TxnService) -> None:
        self.cluster = cluster
        self.txn = txn
        self.num_partitions = txn.num_partitions
        self.held: dict[int, Held] = {}
        self.owners: dict[int, int] = {}  # partition -> node holding its live lease
        self.data_owner: DataOwner = lambda topic, partition: None
        self.loop = asyncio.get_running_loop()
        self.client = NodeClient(cluster.node_id)
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        fenced = cluster.batches.on_fenced

        def on_fenced(shard: str) -> None:  # the group shards' callback, then ours
            if fenced is not None:
                fenced(shard)
            self._fenced(shard)

        cluster.batches.on_fenced = on_fenced

    @property
    def shards(self) -> list[str]:
        return [txn_shard(p) for p in range(self.num_partitions)]

    # ---- the transaction coordinator's gate

    def refusal(self, partition: int) -> ErrorCode | None:
        """None when this node coordinates the partition's transactional ids now."""
        held = self.held.get(partition)
        if held is None or self.loop.time() > held.valid_until:
            return ErrorCode.NOT_COORDINATOR
        if not held.loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None

    def epoch(self, partition: int) -> int:
        held = self.held.get(partition)
        return -1 if held is None else held.epoch

    def owner_of(self, partition: int) -> NodeInfo | None:
        """The node FindCoordinator names for the partition's transactional ids (as Cluster.owner_of)."""
        node = self.owners.get(partition)
        if node is None or (node != self.cluster.node_id and node not in self.cluster.fresh):
            return None
        return self.cluster.nodes.get(node)

    # ---- the log

    def append(self, partition: int, batch: bytes, count: int) -> asyncio.Future[None]:
        written = self.cluster.batches.append(txn_shard(partition), batch, count)
        written.add_done_callback(lambda done: self._written(partition, done))
        return written

    def _written(self, partition: int, done: asyncio.Future[None]) -> None:
        """A failed append: the coordinator replayed a record the log may not have, so the partition
        is read back while the lease holds (as the group shards are: Cluster.write_failed)."""
        if done.cancelled() or done.exception() is None:
            return
        held = self.held.get(partition)
        if held is not None and held.loaded:
            held.loaded = False
            self.txn.unload(partition)
            self._start_load(partition, held)

    # ---- markers

    def marker_owner(self, topic: str, partition: int) -> int | None:
        """The node to send a marker for (topic, partition) to; None: this node writes it itself."""
        if topic == OFFSETS_TOPIC:
            owner = self.cluster.owners.get(partition)
            if owner is None or (owner == self.cluster.node_id and not self.cluster.serves(partition)):
                raise NoRoute(f"{topic}-{partition} has no serving owner")
            return None if owner == self.cluster.node_id else owner
        owner = self.data_owner(topic, partition)
        return None if owner == self.cluster.node_id else owner

    async def send_markers(self, node_id: int, producer_id: int, producer_epoch: int, commit: bool,
                           coordinator_epoch: int, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """WriteTxnMarkers to `node_id` for `partitions`: each partition's error code."""
        from protocol.messages import WriteTxnMarkersRequest as Request

        node = self.cluster.nodes.get(node_id)
        if node is None:
            raise NoRoute(f"node {node_id} is not live")
        by_topic: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            by_topic.setdefault(topic, []).append(index)
        request = Request(markers=[Request.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            topics=[Request.WritableTxnMarkerTopic(name=t, partition_indexes=p) for t, p in by_topic.items()],
            coordinator_epoch=coordinator_epoch)])
        response = await self.client.request(node, ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, request)
        return {(t.name, p.partition_index): int(p.error_code)
                for marker in response.markers for t in marker.topics for p in t.partitions}

    async def verify_remotely(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partition: tuple[str, int], add: bool) -> ErrorCode:
        """The transactional id's coordinator, on another node, verifies (or with `add` adds) the
        partition: AddPartitionsToTxn in its broker form, as Kafka's AddPartitionsToTxnManager sends it."""
        from protocol.messages import AddPartitionsToTxnRequest as Request

        owner = self.owner_of(self.txn.partition_of(transactional_id))
        if owner is None or owner.node_id == self.cluster.node_id:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        request = Request(transactions=[Request.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=not add, topics=[Request.AddPartitionsToTxnTopic(name=partition[0],
                                                                          partitions=[partition[1]])])])
        try:
            response = await self.client.request(owner, ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_VERSION, request)
        except OSError as exc:
            log.warning("txn_verify_failed", node=owner.node_id, error=repr(exc))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if response.error_code:
            code = ErrorCode(response.error_code)
        else:
            code = ErrorCode(response.results_by_transaction[0].topic_results[0].results_by_partition[0]
                             .partition_error_code)
        # the coordinator moved meanwhile: retriable, and not about the group (whose coordinator this is)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE if code == ErrorCode.NOT_COORDINATOR else code

    # ---- leases (the rounds of ownership.py, over the transaction log's shards)

    async def start(self) -> None:
        async with self.cluster.pool.acquire() as conn:
            await conn.execute("INSERT INTO gc_leases (shard) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                               self.shards)
        await self._round()
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while not self._stopping:
            await asyncio.sleep(self.cluster.renew_s)
            try:
                await self._round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database is unreachable: leases lapse locally, retried next round
                log.warning("txn_round_failed", error=repr(exc))

    async def _round(self) -> None:
        cluster = self.cluster
        sent = self.loop.time()
        local_lease = cluster.lease_ms / 1000 * LOCAL_LEASE_FRACTION
        partitions = list(self.held)
        async with cluster.pool.acquire() as conn:
            async with conn.transaction():
                renewed = {row["shard"] for row in await conn.fetch(
                    _ROUND, cluster.node_id, cluster.host, cluster.port, cluster.lease_ms,
                    [txn_shard(p) for p in partitions], [self.held[p].epoch for p in partitions])}
                leases = await conn.fetch(_LEASES)
                nodes = await conn.fetch(_NODES, SETTLE_LEASES * cluster.lease_ms,
                                         STALE_HEARTBEATS * cluster.renew_s * 1000)
            for partition in partitions:
                held = self.held.get(partition)
                if held is None:
                    continue
                if txn_shard(partition) in renewed:
                    held.valid_until = sent + local_lease
                else:
                    self._drop(partition, held, "expired")
            mine = set(self.shards)
            self.owners = {_partition_of(row["shard"]): row["owner"] for row in leases
                           if row["shard"] in mine and row["live"] and row["owner"] is not None}
            if self._stopping:
                return
            live = [row["node_id"] for row in nodes]
            settled = [row["node_id"] for row in nodes if row["settled"]]
            wanted = [txn_shard(p) for p in range(self.num_partitions)
                      if p not in self.owners and preferred_owner(live, txn_shard(p)) == cluster.node_id]
            if wanted:
                claim_sent = self.loop.time()
                for row in await conn.fetch(_CLAIM, cluster.node_id, cluster.lease_ms, wanted):
                    partition = _partition_of(row["shard"])
                    held = self.held[partition] = Held(int(row["epoch"]), claim_sent + local_lease)
                    cluster.batches.epochs[row["shard"]] = held.epoch
                    self.owners[partition] = cluster.node_id
                    cluster.lease_changes.inc(change="gained")
                    log.info("txn_lease_gained", partition=partition, epoch=held.epoch)
                    self._start_load(partition, held)
        for partition, held in list(self.held.items()):
            preferred = preferred_owner(settled, txn_shard(partition))
            if held.loaded and preferred is not None and preferred != cluster.node_id and cluster.node_id in settled:
                await self._hand_over(partition, held, to=preferred)

    def _start_load(self, partition: int, held: Held) -> None:
        if held.load is not None and not held.load.done():
            return
        held.load = asyncio.ensure_future(self._load(partition, held))

    async def _load(self, partition: int, held: Held) -> None:
        started = time.perf_counter()
        try:
            batches = await self.cluster.batches.read(txn_shard(partition))
            resolved = resolve(batches)  # each transactional id's latest record, tombstones as None values
            records = [Record(key, value) for key, value in zip(resolved.keys, resolved.values, strict=True)]
        except Exception as exc:  # the database failed: let the lease lapse so a node that can load takes it
            log.warning("txn_load_failed", partition=partition, error=repr(exc))
            self._drop(partition, held, "load_failed")
            return
        if self.held.get(partition) is not held:  # lost while loading
            return
        self.cluster.batches.appended_batches[txn_shard(partition)] = len(batches)
        count = self.txn.install(partition, records)
        held.loaded = True
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.cluster.load_time.observe(elapsed_ms)
        log.info("txn_partition_loaded", partition=partition, epoch=held.epoch, records=count,
                 ms=round(elapsed_ms, 1))

    def _fenced(self, shard: str) -> None:
        if shard.startswith(TRANSACTION_STATE_TOPIC + "-"):
            partition = _partition_of(shard)
            held = self.held.get(partition)
            if held is not None:
                self._drop(partition, held, "fenced")

    def _drop(self, partition: int, held: Held, why: str) -> None:
        if self.held.get(partition) is not held:
            return
        del self.held[partition]
        self.cluster.batches.epochs.pop(txn_shard(partition), None)
        if held.load is not None and not held.load.done():
            held.load.cancel()
        self.txn.unload(partition)
        if self.owners.get(partition) == self.cluster.node_id:
            del self.owners[partition]
        self.cluster.lease_changes.inc(change="lost")
        log.warning("txn_lease_lost", partition=partition, epoch=held.epoch, reason=why)

    async def _hand_over(self, partition: int, held: Held, to: int | None) -> None:
        """Stop coordinating, let the last write finish, then free the lease for the next owner."""
        del self.held[partition]
        pending = self.txn.pending_write(partition)
        self.txn.unload(partition)
        if pending is not None:
            await asyncio.wait([pending], timeout=STATEMENT_TIMEOUT_S)
        async with self.cluster.pool.acquire() as conn:
            await conn.execute(_RELEASE, txn_shard(partition), self.cluster.node_id, held.epoch)
        self.cluster.batches.epochs.pop(txn_shard(partition), None)
        self.owners.pop(partition, None)
        self.cluster.lease_changes.inc(change="handed_over")
        log.info("txn_lease_handed_over", partition=partition, epoch=held.epoch, to=to)

    async def close(self) -> None:
        """A clean shutdown: every transaction log lease handed over at once."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
        await self.client.close()
        try:
            for partition, held in list(self.held.items()):
                await self._hand_over(partition, held, to=None)
        except Exception as exc:  # the database is gone: the leases expire by themselves
            log.warning("txn_handover_failed", error=repr(exc))


class ClusterProducerIds:
    """Producer ids from blocks of `gc_producer_ids`: unique across the nodes of the cluster.

    `allocate` is synchronous (the transaction coordinator's core calls it); it takes the next id of
    the current block and starts fetching the next block at PREFETCH_AT of it. With no id left and
    the next block not there yet it raises NoProducerIds (retriable: COORDINATOR_LOAD_IN_PROGRESS,
    as Kafka's ProducerIdManager answers while its block request is outstanding)."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self._next = 0
        self._end = 0
        self._spare: tuple[int, int] | None = None
        self._fetching: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._next, self._end = await self._fetch_block()

    async def _fetch_block(self) -> tuple[int, int]:
        async with self.pool.acquire() as conn:
            start = int(await conn.fetchval(
                "UPDATE gc_producer_ids SET next_block = next_block + $1 RETURNING next_block - $1",
                PRODUCER_ID_BLOCK))
        log.info("producer_id_block", first=start, size=PRODUCER_ID_BLOCK)
        return start, start + PRODUCER_ID_BLOCK

    async def _prefetch(self) -> None:
        try:
            self._spare = await self._fetch_block()
        except Exception as exc:  # retried at the next allocation
            log.warning("producer_id_block_failed", error=repr(exc))

    def available(self) -> bool:
        return self._next < self._end or self._spare is not None

    def allocate(self) -> int:
        if self._next >= self._end and self._spare is not None:
            (self._next, self._end), self._spare = self._spare, None
        if self._next >= self._end:
            self._start_prefetch()
            raise NoProducerIds("the next block of producer ids is not fetched yet")
        producer_id = self._next
        self._next += 1
        if self._spare is None and self._next >= self._end - PRODUCER_ID_BLOCK * (1 - PREFETCH_AT):
            self._start_prefetch()
        return producer_id

    def _start_prefetch(self) -> None:
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.ensure_future(self._prefetch())


class NoProducerIds(Exception):
    """No producer id at hand this moment: answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""


class NodeClient:
    """Requests from this node to another node of the cluster (WriteTxnMarkers): one connection per
    node, one request at a time on it, on the address the node put in `gc_nodes`."""

    def __init__(self, node_id: int) -> None:
        self.client_id = f"groupcoord-node-{node_id}"
        self._connections: dict[int, tuple[tuple[str, int], asyncio.StreamReader, asyncio.StreamWriter]] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._correlation = 0

    async def request(self, node: NodeInfo, api_key: int, version: int, message: Any) -> Any:
        from protocol.client import decode_response, encode_request  # the client side of the codec

        lock = self._locks.setdefault(node.node_id, asyncio.Lock())
        async with lock:
            self._correlation += 1
            frame = encode_request(api_key, version, self._correlation, self.client_id, message)
            try:
                reader, writer = await self._connection(node)
                writer.write(frame)
                size = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), STATEMENT_TIMEOUT_S), "big")
                body = await asyncio.wait_for(reader.readexactly(size), STATEMENT_TIMEOUT_S)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                self._forget(node.node_id)
                raise NoRoute(f"node {node.node_id} at {node.host}:{node.port}: {exc!r}") from exc
            correlation, response = decode_response(api_key, version, body)
            if correlation != self._correlation:
                self._forget(node.node_id)
                raise NoRoute(f"node {node.node_id} answered correlation {correlation}, not {self._correlation}")
            return response

    async def _connection(self, node: NodeInfo) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        address = (node.host, node.port)
        known = self._connections.get(node.node_id)
        if known is not None and known[0] == address and not known[2].is_closing():
            return known[1], known[2]
        self._forget(node.node_id)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), STATEMENT_TIMEOUT_S)
        self._connections[node.node_id] = (address, reader, writer)
        return reader, writer

    def _forget(self, node_id: int) -> None:
        known = self._connections.pop(node_id, None)
        if known is not None:
            known[2].close()

    async def close(self) -> None:
        for node_id in list(self._connections):
            self._forget(node_id)

