"""A groupcoord cluster over PostgreSQL, for the cluster tests.

ONE private throwaway PostgreSQL per test session (Debian's initdb/pg_ctl, a unix socket in its own
directory, TCP on a free loopback port, stopped at the end); each test gets a fresh database in it
and three groupcoord nodes started by the ordinary `server_factory` (so they are stopped too).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordinator.cluster.local import ThrowawayPostgres
from coordinator.cluster.store import offsets_shard
from coordinator.records import partition_for
from tests.conftest import ServerProcess, server_command

OFFSETS_PARTITIONS = 50
TXN_PARTITIONS = 50  # transaction.state.log.num.partitions


@pytest.fixture(scope="session")
def postgres():
    pg = ThrowawayPostgres().start()
    yield pg
    pg.stop()


def query(url: str, sql: str, *args: Any) -> list[dict[str, Any]]:
    """Run one statement against the cluster's database from a (synchronous) test."""
    import asyncpg

    async def run() -> list[dict[str, Any]]:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            return [dict(row) for row in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(run())


@dataclass
class Cluster:
    url: str
    nodes: dict[int, ServerProcess] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def alive(self) -> dict[int, ServerProcess]:
        return {i: n for i, n in self.nodes.items() if n.proc is not None and n.proc.poll() is None}

    def owners(self) -> dict[str, int | None]:
        """The coordinator shards' lease holders (None: free or expired)."""
        return {shard: owner for shard, owner in self.leases().items() if shard.startswith("__consumer_offsets-")}

    def leases(self) -> dict[str, int | None]:
        """Every lease's holder: coordinator shards and topic partitions (`<topic>-<partition>`)."""
        return {row["shard"]: row["owner"] for row in query(
            self.url, "SELECT shard, CASE WHEN expires_at > now() THEN owner END AS owner FROM gc_leases")}

    def wait_leader(self, topic: str, partition: int, timeout: float = 20.0, not_node: int | None = None) -> int:
        """The node holding the lease of a topic partition (another than `not_node`)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            owner = self.leases().get(f"{topic}-{partition}")
            if owner is not None and owner != not_node:
                return owner
            time.sleep(0.1)
        raise TimeoutError(f"no leader for {topic}-{partition} after {timeout}s")

    def owner_of(self, group_id: str) -> int | None:
        return self.owners().get(offsets_shard(partition_for(group_id, OFFSETS_PARTITIONS)))

    def wait_owner(self, group_id: str, timeout: float = 20.0, not_node: int | None = None) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            owner = self.owner_of(group_id)
            if owner is not None and owner != not_node:
                return owner
            time.sleep(0.1)
        raise TimeoutError(f"no owner for {group_id!r} after {timeout}s")

    def wait_balanced(self, timeout: float = 30.0) -> None:
        """Every live node owns shards, none is unowned, and nothing moved for a second."""
        deadline = time.monotonic() + timeout
        last: dict[str, int | None] | None = None
        while time.monotonic() < deadline:
            owners = self.owners()
            balanced = (len(owners) == OFFSETS_PARTITIONS and None not in owners.values()
                        and set(owners.values()) == set(self.alive()))
            if balanced and owners == last:
                return
            last = owners if balanced else None
            time.sleep(1.0)
        raise TimeoutError(f"cluster not balanced after {timeout}s: {self.owners()}")

    def signal(self, node_id: int, sig: int) -> None:
        proc = self.nodes[node_id].proc
        assert proc is not None
        os.kill(proc.pid, sig)
        if sig == signal.SIGKILL:
            proc.wait(timeout=10)


@pytest.fixture
def database(postgres: ThrowawayPostgres) -> str:
    """A fresh, migrated database for one test."""
    url = postgres.create_database("t_" + uuid.uuid4().hex[:12])
    subprocess.run([*server_command(), "db", "init", "--store-url", url], check=True, capture_output=True)
    return url


@pytest.fixture
def cluster_factory(server_factory, database: str):
    def start(count: int = 3, *overrides: str, balanced: bool = True) -> Cluster:
        cluster = Cluster(database)
        for node_id in range(1, count + 1):
            cluster.nodes[node_id] = server_factory(f"node.id={node_id}", f"coordinator.store.url={database}",
                                                    "num.partitions=3", *overrides)
        if balanced:
            cluster.wait_balanced()
        return cluster

    return start
