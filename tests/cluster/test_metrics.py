"""A cluster node's metrics: leases gained and shard load times, on /metrics."""

from __future__ import annotations

import re
import urllib.request

from tests.cluster.conftest import OFFSETS_PARTITIONS, TXN_PARTITIONS
from tests.conftest import free_port


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def sample(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in /metrics"
    return float(match.group(1))


def test_a_lone_node_reports_every_lease_gained_and_loaded(cluster_factory) -> None:
    port = free_port()
    cluster_factory(1, f"http.listener=127.0.0.1:{port}")
    text = scrape(port)
    # leases and loads of the `__consumer_offsets` and `__transaction_state` shards alike
    gained = sample(text, 'groupcoord_cluster_lease_changes_total{change="gained"}')
    assert gained == OFFSETS_PARTITIONS + TXN_PARTITIONS
    assert sample(text, "groupcoord_cluster_shards_served") == OFFSETS_PARTITIONS
    assert sample(text, "groupcoord_cluster_live_nodes") == 1
    assert sample(text, "groupcoord_cluster_shard_load_ms_count") == OFFSETS_PARTITIONS + TXN_PARTITIONS
