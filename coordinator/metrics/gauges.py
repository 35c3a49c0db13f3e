"""Gauges read from live server state when a page is rendered or a push goes out (never kept up to date)."""

from __future__ import annotations

from collections import Counter as Tally
from typing import TYPE_CHECKING

from coordinator.core.runtime.shard import GroupSummary
from coordinator.metrics.registry import Labels, labels_of
from coordinator.metrics.server_metrics import GROUP_METRICS, ServerMetrics

if TYPE_CHECKING:
    from coordinator.server.app import Server

CLASSIC_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
SHARE_STATES = ("Empty", "Stable", "Dead")  # GroupCoordinatorMetrics' share-group-count state tags


def register_server_gauges(metrics: ServerMetrics, server: Server) -> None:
    broker = server.broker

    def classic_groups() -> list[GroupSummary]:
        return [g for g in broker.groups.group_summaries() if g.protocol == "classic"]

    def share_groups() -> list[GroupSummary]:
        return [g for g in broker.groups.group_summaries() if g.protocol == "share"]

    def group_count() -> dict[Labels, float]:
        return {labels_of({"protocol": "classic"}): len(classic_groups()),
                labels_of({"protocol": "share"}): len(share_groups())}

    def share_group_count() -> dict[Labels, float]:
        tally = Tally(g.state for g in share_groups())
        return {labels_of({"state": s}): tally.get(s, 0) for s in SHARE_STATES}

    def share_partition_records(acquired_only: bool) -> dict[Labels, float]:
        # SharePartitionMetrics' InFlightMessageCount (tags group, topic, partition), and the acquired part of it
        share = broker.share
        out: dict[Labels, float] = {}
        for (group_id, topic_id, index), sp in list(share.partitions.items()):
            topic = broker.topics.by_id(topic_id)
            labels = labels_of({"group": group_id, "topic": topic.name if topic is not None else str(topic_id),
                                "partition": index})
            out[labels] = sp.acquired_count() if acquired_only else sp.in_flight()
        return out

    def classic_group_count() -> dict[Labels, float]:
        tally = Tally(g.state for g in classic_groups())
        return {labels_of({"state": s}): tally.get(s, 0) for s in CLASSIC_STATES}

    def members() -> dict[Labels, float]:
        return {(): sum(g.members for g in classic_groups())}

    def offset_count() -> dict[Labels, float]:
        return {(): broker.groups.offset_count()}

    def connections() -> dict[Labels, float]:
        return {(): len(server.connections)}

    def log_sizes() -> dict[Labels, float]:
        sizes: Tally[str] = Tally()
        for partition in broker.data.logs:
            sizes[partition.topic] += partition.size_bytes
        return {labels_of({"topic": t}): size for t, size in sorted(sizes.items())}

    metrics.add_gauge(GROUP_METRICS + "group_count", "Groups, by rebalance protocol", group_count)
    metrics.add_gauge(GROUP_METRICS + "classic_group_count", "Classic groups, by state", classic_group_count)
    metrics.add_gauge(GROUP_METRICS + "share_group_count", "Share groups, by state", share_group_count)
    metrics.add_gauge("kafka_server_share_partition_metrics_in_flight_message_count",
                      "Records in the in-flight window (start to end offset) per share-partition",
                      lambda: share_partition_records(acquired_only=False))
    metrics.add_gauge("groupcoord_share_partition_acquired_records", "Records acquired (locked) per share-partition",
                      lambda: share_partition_records(acquired_only=True))
    metrics.add_gauge(GROUP_METRICS + "offset_count", "Committed offsets retained", offset_count)
    metrics.add_gauge("groupcoord_group_members", "Members of all groups", members)
    metrics.add_gauge("kafka_server_socket_server_metrics_connection_count", "Open client connections", connections)
    metrics.add_gauge("groupcoord_log_size_bytes", "Bytes on disk of each topic's partition logs", log_sizes)
