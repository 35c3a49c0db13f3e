"""The server's lifecycle: listen, reap idle connections, shut down cleanly.

Start-up order: the broker's `startup_hooks` (open logs, replay the coordinator
state), then listen and log `server_ready`.

Shutdown order (SIGTERM/SIGINT): stop accepting, stop reading, run the
`stopping_hooks` (answer what would otherwise wait past the deadline, such as
parked JoinGroups), let in-flight requests finish within `shutdown.timeout.ms`,
run the `shutdown_hooks` (flush and close the stores), close every connection.
Hooks may be plain functions or coroutine functions; they run in list order.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import importlib
import inspect
import pkgutil
import signal
from collections import Counter
from collections.abc import Callable

import structlog

from coordinator.config import Config
from coordinator.group_config_store import GroupConfigStore
from coordinator.metrics.gauges import register_server_gauges
from coordinator.metrics.http import OpsEndpoint
from coordinator.metrics.statsd import StatsdPusher
from coordinator.security.listeners import ListenerSecurity
from coordinator.server import apis
from coordinator.server.broker import Broker, Hook
from coordinator.server.connection import Connection, SaslConnection
from coordinator.server.data_plane import DataPlane
from coordinator.server.groups import GroupRuntime
from coordinator.server.heartbeat_lane import HeartbeatLane
from coordinator.server.log_record_store import LogRecordStore
from coordinator.server.record_store import RecordStore
from coordinator.server.share_partitions import SharePartitionManager
from coordinator.server.topics_view import RegistryTopics
from coordinator.server.transactions import TxnService
from coordinator.topics import OFFSETS_TOPIC
from protocol import accel

log = structlog.get_logger()


def load_api_modules() -> None:
    """Import every module of `coordinator.server.apis`; each registers its handler."""
    for module in pkgutil.iter_modules(apis.__path__):
        importlib.import_module(f"{apis.__name__}.{module.name}")


class Server:
    def __init__(self, config: Config) -> None:
        load_api_modules()
        self.config = config
        self.security = ListenerSecurity(config)  # first: bad TLS/SASL settings stop the start before any I/O
        self.broker = Broker(config)
        self.loop = asyncio.get_running_loop()
        # The heartbeat fast lane every connection cuts its frames through (None: all take dispatch).
        self.heartbeat_lane: HeartbeatLane | None = HeartbeatLane(self.broker)
        store_url = config["coordinator.store.url"]
        if store_url:  # a cluster node: topic partitions in PostgreSQL, led through leases
            from coordinator.cluster.partitions import ClusterDataPlane
            self.broker.data = ClusterDataPlane(config, self.broker.data_dir, self.broker.node_id)
        else:
            self.broker.data = DataPlane(config, self.broker.data_dir)
        offsets_partitions = config["offsets.topic.num.partitions"]
        if OFFSETS_TOPIC not in self.broker.topics:
            self.broker.topics.create(OFFSETS_TOPIC, offsets_partitions, {"cleanup.policy": "compact"}, internal=True)
        store: RecordStore
        pg_store = None
        if store_url:  # a cluster node: PostgreSQL holds the records, leases decide the shards it serves
            from coordinator.cluster.store import BatchStore, PgRecordStore
            store = pg_store = PgRecordStore(BatchStore(None, self.broker.node_id))
        else:
            store = LogRecordStore(self.broker.data.logs, offsets_partitions)
        self.broker.groups = GroupRuntime(config, store, self.broker.metrics, topics=RegistryTopics(self.broker.topics),
                                          group_configs=GroupConfigStore(self.broker.data_dir))
        self.broker.topics.on_change(self.broker.groups.topics_changed)
        self.broker.txn = TxnService(config, self.broker)  # transactions: after the data plane and groups
        self.broker.share = SharePartitionManager(self.broker)
        self.broker.startup_hooks += [self.broker.data.logs.start, self.broker.groups.load, self.broker.txn.load,
                                      self.broker.share.load]
        self.broker.shutdown_hooks += [self.broker.txn.close, self.broker.groups.close, self.broker.share.close,
                                       self.broker.data.close]
        if pg_store is not None:
            from coordinator.cluster.ownership import Cluster
            advertised = self.broker.advertised
            cluster = Cluster(config, self.broker.node_id, advertised.host, advertised.port, self.broker.groups,
                              pg_store, self.broker.metrics, self.broker.cluster_id, self.broker.topics)
            self.broker.cluster = cluster

            async def join_cluster() -> None:
                await cluster.start()
                self.broker.cluster_id = cluster.cluster_id  # one id for the whole cluster, kept in the database

            from coordinator.cluster.partitions import ClusterDataPlane, PartitionOwnership
            from coordinator.cluster.share_state import ClusterShareState
            from coordinator.cluster.txn import ClusterProducerIds, TxnShards
            data = self.broker.data
            assert isinstance(data, ClusterDataPlane)
            ClusterShareState(self.broker.share, data)  # share-partitions with their topic partition's leader
            leads = PartitionOwnership(cluster, data, self.broker.topics)
            txn_shards = self.broker.txn.shards = TxnShards(cluster, self.broker.txn)

            def data_owner(topic: str, partition: int) -> int | None:  # markers go to the partition's leader
                found = data.leader_of(topic, partition)
                return None if found is None else found[0]  # None: written here, retried until led somewhere
            txn_shards.data_owner = data_owner

            async def join_transactions() -> None:  # producer ids from the database, then the log's leases
                producer_ids = ClusterProducerIds(cluster.pool)
                await producer_ids.start()
                data.producer_ids = producer_ids  # type: ignore[assignment]
                await txn_shards.start()

            self.broker.startup_hooks += [join_cluster, join_transactions, leads.start]
            self.broker.shutdown_hooks.insert(1, txn_shards.close)  # the transaction log's leases handed over
            self.broker.shutdown_hooks.insert(3, leads.close)  # once the groups stop: the partitions' leases,
            self.broker.shutdown_hooks.insert(4, cluster.close)  # then the shards' leases, before the pool closes
        self.connections: set[Connection] = set()
        self.connections_per_host: Counter[str] = Counter()
        self.servers: list[asyncio.base_events.Server] = []
        self.stop_requested = asyncio.Event()
        self._idle_changed = asyncio.Event()
        self._reaper: asyncio.Task | None = None
        self.metrics = self.broker.metrics
        register_server_gauges(self.metrics, self)
        self.ready = False  # /readyz: coordinator state loaded and listeners accepting
        self.ops: OpsEndpoint | None = None
        self.statsd: StatsdPusher | None = None

    async def start(self) -> None:
        if self.config["http.listener"] is not None:  # first, so probes get 503 rather than refused while loading
            address = self.config["http.listener"]
            self.ops = OpsEndpoint(self.metrics.registry, address.host, address.port, lambda: self.ready)
            await self.ops.start()
        await _run_hooks(self.broker.startup_hooks)
        for listener in self.config["listeners"]:
            connection_class = SaslConnection if self.security.uses_sasl(listener) else Connection
            context = self.security.ssl_context(listener)
            # A TLS handshake is held to the time a request may take to arrive (a slow one is a slowloris).
            handshake_s = self.config["request.read.timeout.ms"] / 1000 if context is not None else None
            server = await self.loop.create_server(functools.partial(connection_class, self, listener),
                                                   listener.host or None, listener.port, reuse_address=True,
                                                   backlog=1024, ssl=context, ssl_handshake_timeout=handshake_s,
                                                   start_serving=False)
            self.servers.append(server)
        # Every listener is bound before any accepts, and all start in one loop iteration (gather): a
        # client that reached one can reach them all.
        await asyncio.gather(*(server.start_serving() for server in self.servers))
        for listener, server in zip(self.config["listeners"], self.servers, strict=True):
            host, port = server.sockets[0].getsockname()[:2]
            log.info("server_ready", listener=listener.name, host=host, port=port,
                     advertised=str(self.broker.advertised_for(listener.name)), cluster_id=self.broker.cluster_id,
                     accelerator=accel.status(), accelerator_stale=accel.stale_modules() or None)
        self._reaper = asyncio.ensure_future(self._reap_idle_connections())
        self.ready = True
        if self.config["metrics.statsd.address"] is not None:
            address = self.config["metrics.statsd.address"]
            self.statsd = StatsdPusher(self.metrics.registry, address.host, address.port,
                                       self.config["metrics.statsd.prefix"], self.config["metrics.statsd.interval.ms"])
            await self.statsd.start()

    def admit(self, conn: Connection) -> bool:
        """Take a new connection in, or refuse it (the caller closes it) when a limit is reached."""
        host = conn.client_host
        if len(self.connections) >= self.config["max.connections"]:
            limit = "max.connections"
        elif self.connections_per_host[host] >= self.config["max.connections.per.ip"]:
            limit = "max.connections.per.ip"
        else:
            self.connections.add(conn)
            self.connections_per_host[host] += 1
            return True
        self.metrics.connections_refused.inc(limit=limit)
        log.debug("connection_refused", peer=conn.peer, limit=limit)
        return False

    def release(self, conn: Connection) -> None:
        """A connection is gone (a refused one was never taken in)."""
        if conn in self.connections:
            self.connections.remove(conn)
            self.connections_per_host[conn.client_host] -= 1
            if not self.connections_per_host[conn.client_host]:
                del self.connections_per_host[conn.client_host]

    async def _reap_idle_connections(self) -> None:
        """Close connections idle past connections.max.idle.ms, and senders of a request that has
        been arriving for longer than request.read.timeout.ms (a slowloris keeps a connection
        'active' a byte at a time; the partial frame's age catches it)."""
        idle_s = self.config["connections.max.idle.ms"] / 1000
        read_s = self.config["request.read.timeout.ms"] / 1000
        period = min(max(min(idle_s, read_s) / 4, 0.01), 5.0)
        while True:
            await asyncio.sleep(period)
            now = self.loop.time()
            for conn in list(self.connections):
                if conn.busy:
                    continue
                if conn.last_active < now - idle_s:
                    log.info("connection_idle_closing", peer=conn.peer, client_id=conn.client_id,
                             idle_ms=self.config["connections.max.idle.ms"])
                    conn.close("idle")
                elif conn.partial_since is not None and conn.partial_since < now - read_s:
                    log.info("connection_slow_request_closing", peer=conn.peer, client_id=conn.client_id,
                             buffered_bytes=len(conn.buffer), timeout_ms=self.config["request.read.timeout.ms"])
                    conn.close("slow_request")

    def notify_idle(self) -> None:
        self._idle_changed.set()

    async def shutdown(self) -> None:
        log.info("server_stopping", connections=len(self.connections))
        self.ready = False
        for server in self.servers:
            server.close()
        if self._reaper is not None:
            self._reaper.cancel()
        for conn in list(self.connections):
            conn.stop_reading()
        await _run_hooks(self.broker.stopping_hooks)
        deadline = self.loop.time() + self.config["shutdown.timeout.ms"] / 1000
        while any(c.busy for c in self.connections) and self.loop.time() < deadline:
            self._idle_changed.clear()
            try:
                await asyncio.wait_for(self._idle_changed.wait(), timeout=max(0.0, deadline - self.loop.time()))
            except TimeoutError:
                break
        unfinished = sum(1 for c in self.connections if c.busy)
        if unfinished:
            log.warning("shutdown_deadline_passed", unfinished_requests=unfinished)
        await _run_hooks(self.broker.shutdown_hooks)
        for conn in list(self.connections):
            conn.close()
        for server in self.servers:
            await server.wait_closed()
        if self.statsd is not None:
            await self.statsd.stop()  # after the shutdown hooks, so the final push has the final figures
        if self.ops is not None:
            await self.ops.stop()
        log.info("server_stopped")

    async def run_until_stopped(self, started: Callable[[], None] | None = None) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self.stop_requested.set)
        await self.start()
        if started is not None:
            started()
        await self.stop_requested.wait()
        await self.shutdown()


async def _run_hooks(hooks: list[Hook]) -> None:
    for hook in hooks:
        result = hook()
        if inspect.isawaitable(result):
            await result


# The collector's defaults (a young collection every 700 new objects) suit short scripts, not a
# server that makes hundreds of short-lived objects per request: an offset commit of 100 partitions
# triggered about one collection per request, each walking the young objects of the last ones, and
# full collections walked everything loaded at start. Under callgrind, GC was ~30% of a commit.
GC_THRESHOLDS = (20_000, 50, 100)


async def serve(config: Config, tune_gc: bool = False) -> None:
    """``tune_gc`` (the server process, not tests that run servers in theirs): rarer collections, and
    what exists once the server has started (modules, codecs, the loaded groups) frozen out of them."""
    if tune_gc:
        gc.set_threshold(*GC_THRESHOLDS)
    server = Server(config)
    await server.run_until_stopped(gc.freeze if tune_gc else None)


def run(config: Config) -> None:
    """Run the server until SIGTERM/SIGINT, on uvloop when chosen and installed."""
    choice = config["event.loop"]
    if choice in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if choice == "uvloop":
                raise SystemExit("event.loop=uvloop but uvloop is not installed "
                                 "(pip install 'groupcoord[speed]')") from None
        else:
            uvloop.run(serve(config, tune_gc=True))
            return
    asyncio.run(serve(config, tune_gc=True))
