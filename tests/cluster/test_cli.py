"""`groupcoord db init` and `groupcoord cluster status` against the session's PostgreSQL."""

from __future__ import annotations

import json
import subprocess

from coordinator.cluster.schema import SCHEMA_VERSION
from tests.cluster.conftest import OFFSETS_PARTITIONS, TXN_PARTITIONS
from tests.conftest import free_port, server_command


def groupcoord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*server_command(), *args], capture_output=True, text=True, timeout=60)


def test_db_init_migrates_a_fresh_database_once(postgres) -> None:
    url = postgres.create_database("cli_init")
    first = groupcoord("db", "init", "--store-url", url)
    assert first.returncode == 0 and f"schema migrated to version {SCHEMA_VERSION}" in first.stdout, first
    again = groupcoord("db", "init", "--store-url", url)
    assert again.returncode == 0 and f"schema already at version {SCHEMA_VERSION}" in again.stdout, again


def test_unreachable_or_missing_database_gets_a_readable_line() -> None:
    down = groupcoord("cluster", "status", "--store-url", f"postgresql://nobody@127.0.0.1:{free_port()}/none")
    assert down.returncode == 1 and down.stderr.startswith("groupcoord cluster status: ")
    assert "Traceback" not in down.stderr
    missing = groupcoord("db", "init")
    assert missing.returncode == 2 and "--store-url" in missing.stderr


def test_cluster_status_shows_nodes_leases_and_epochs(cluster_factory) -> None:
    cluster = cluster_factory(2)
    result = groupcoord("cluster", "status", "--store-url", cluster.url, "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["unowned"] == 0
    assert {n["node_id"]: n["live"] for n in status["nodes"]} == {1: True, 2: True}
    # every `__consumer_offsets` and `__transaction_state` partition is a leased shard
    assert sum(n["shards"] for n in status["nodes"]) == OFFSETS_PARTITIONS + TXN_PARTITIONS
    assert all(n["shards"] > 0 for n in status["nodes"])
    assert all(lease["epoch"] >= 1 and lease["owner"] in (1, 2) for lease in status["leases"])
    table = groupcoord("cluster", "status", "--store-url", cluster.url)
    assert table.returncode == 0 and "__consumer_offsets-0" in table.stdout
    assert "__transaction_state-0" in table.stdout and "0 shard(s) without" in table.stdout
