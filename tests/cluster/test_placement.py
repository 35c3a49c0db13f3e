"""Where shards go: rendezvous hashing of (node id, shard) over the live nodes."""

from __future__ import annotations

from collections import Counter

from coordinator.cluster.ownership import preferred_owner
from coordinator.cluster.store import offsets_shard

SHARDS = [offsets_shard(p) for p in range(50)]


def test_shards_spread_over_the_live_nodes() -> None:
    counts = Counter(preferred_owner([1, 2, 3], shard) for shard in SHARDS)
    assert set(counts) == {1, 2, 3}
    assert min(counts.values()) >= 8  # 50 shards over 3 nodes: no node starved


def test_a_node_leaving_moves_only_its_own_shards_and_coming_back_restores_them() -> None:
    before = {shard: preferred_owner([1, 2, 3], shard) for shard in SHARDS}
    without_2 = {shard: preferred_owner([1, 3], shard) for shard in SHARDS}
    assert all(without_2[s] == before[s] for s in SHARDS if before[s] != 2)
    assert all(without_2[s] in (1, 3) for s in SHARDS)
    assert {s: preferred_owner([3, 1, 2], s) for s in SHARDS} == before  # the order of the list does not matter


def test_no_live_node_means_no_owner() -> None:
    assert preferred_owner([], SHARDS[0]) is None
