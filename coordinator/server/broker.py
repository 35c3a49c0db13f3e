"""What the API handlers share: configuration, identity, topics, and shutdown hooks."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from coordinator.config import WILDCARD_HOSTS, Config, Listener
from coordinator.metrics.server_metrics import ServerMetrics
from coordinator.security.access import make_authorizer
from coordinator.security.authorizer import Authorizer
from coordinator.topics import TopicRegistry

if TYPE_CHECKING:
    from coordinator.cluster.ownership import Cluster
    from coordinator.server.data_plane import DataPlane
    from coordinator.server.groups import GroupRuntime
    from coordinator.server.share_partitions import SharePartitionManager
    from coordinator.server.transactions import TxnService

log = structlog.get_logger()

Hook = Callable[[], Awaitable[None] | None]

META_FILE = "meta.properties"


def load_or_create_cluster_id(data_dir: Path, node_id: int) -> str:
    """The cluster id kept in `<log.dirs>/meta.properties`, created once like Kafka's."""
    path = data_dir / META_FILE
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "cluster.id" and value.strip():
                return value.strip()
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    tmp.replace(path)
    log.info("cluster_id_created", cluster_id=cluster_id, path=str(path))
    return cluster_id


def advertised_by_listener_name(config: Config) -> dict[str, Listener]:
    """What clients of each listener are told to connect to: the advertised listener of the same
    name, else the listener itself (a wildcard bind address as 127.0.0.1, the one address sure to
    reach it). With two listeners of one name, the first one's."""
    advertised = {}
    for listener in reversed(config["advertised.listeners"] or ()):
        advertised[listener.name] = listener
    by_name: dict[str, Listener] = {}
    for listener in config["listeners"]:
        if listener.name in by_name:
            continue
        chosen = advertised.get(listener.name, listener)
        if chosen.host in WILDCARD_HOSTS:
            chosen = Listener(chosen.name, "127.0.0.1", chosen.port)
        by_name[listener.name] = chosen
    return by_name


def cluster_topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"groupcoord:topic:{name}")


class Broker:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.node_id: int = config["node.id"]
        self.data_dir: Path = config["log.dirs"]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = load_or_create_cluster_id(self.data_dir, self.node_id)
        self.advertised: Listener = config.advertised_listener  # the first listener's, for logs and tools
        self._advertised_by_name = advertised_by_listener_name(config)
        # A cluster's nodes each keep a registry, in step through the database: ids from names agree.
        self.topics = TopicRegistry(self.data_dir, id_for_name=cluster_topic_id if config["coordinator.store.url"]
                                    else None)
        self.groups: GroupRuntime  # set by the server once the event loop runs
        self.data: DataPlane
        self.txn: TxnService  # the transaction coordinator, set by the server like `groups`
        self.share: SharePartitionManager  # share sessions and share-partitions (KIP-932), set by the server
        self.cluster: Cluster | None = None  # a cluster node (coordinator.store.url): leases and routing
        self.metrics = ServerMetrics()
        self.authorizer: Authorizer | None = make_authorizer(config, self.data_dir)
        # Lifecycle hooks (plain or async callables, run in order; see coordinator.server.app):
        self.startup_hooks: list[Hook] = []  # before listening: open stores, replay state
        self.stopping_hooks: list[Hook] = []  # reading stopped: release requests parked indefinitely
        self.shutdown_hooks: list[Hook] = []  # in-flight work done or timed out: flush, close

    def advertised_for(self, listener_name: str) -> Listener:
        """The host and port to give a client whose request came in on the listener of this name."""
        return self._advertised_by_name.get(listener_name, self.advertised)
