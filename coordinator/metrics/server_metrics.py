"""The server's named metrics, and how the coordinator's events move them.

Names follow Kafka's where Kafka has one, in the form the Prometheus JMX exporter gives them
(`kafka.server:type=group-coordinator-metrics,name=offset-commit-count` becomes
`kafka_server_group_coordinator_metrics_offset_commit_count`); the rest are `groupcoord_*`.
The coordinator core stays free of metrics: the runtime hands each `GroupEvent` it logs to
`ServerMetrics.on_group_event` as well.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from coordinator.metrics.registry import Labels, Registry, labels_of
from protocol.apis import API_SPECS

GROUP_METRICS = "kafka_server_group_coordinator_metrics_"
REQUEST_METRICS = "kafka_network_request_metrics_"
HEARTBEAT_KEY = 12  # ApiKey.HEARTBEAT

# A rebalance's free-text reason (KIP-800 style, as Kafka words it) -> a short, bounded label value.
_TRIGGERS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), t) for p, t in (
    (r"^Adding new (static )?member", "member_joined"),
    (r"^Updating metadata", "metadata_changed"),
    (r"selected protocol will change", "protocol_changed"),
    (r"^Leaving group", "member_left"),
    (r"on heartbeat expiration", "session_expired"),
    (r"pending sync", "sync_expired"),
    (r"rejoin|re-join", "member_rejoined"),
    (r"over capacity|max size", "group_max_size"),
))


def rebalance_trigger(reason: str) -> str:
    for pattern, trigger in _TRIGGERS:
        if pattern.search(reason):
            return trigger
    return "other"


class ServerMetrics:
    def __init__(self) -> None:
        r = self.registry = Registry()
        self.requests = r.counter(REQUEST_METRICS + "requests", "Requests handled, by API and version")
        self.request_time = r.timer(REQUEST_METRICS + "total_time_ms", "Time from request decoded to response ready")
        self.offset_commits = r.counter(GROUP_METRICS + "offset_commit_count", "Offsets committed")
        self.offset_expirations = r.counter(GROUP_METRICS + "offset_expiration_count", "Offsets expired by retention")
        self.offset_deletions = r.counter(GROUP_METRICS + "offset_deletion_count", "Offsets deleted by admins")
        self.completed_rebalances = r.counter(GROUP_METRICS + "group_completed_rebalance_count",
                                              "Classic group rebalances that completed (join phase done)")
        self.rebalances = r.counter("groupcoord_rebalances", "Rebalances started, by trigger")
        self.rebalance_time = r.timer("groupcoord_rebalance_duration_ms",
                                      "From a rebalance starting to the group being Stable (or Empty)")
        self.heartbeats = r.counter("groupcoord_heartbeats", "Heartbeat requests, by error")
        self.member_events = r.counter("groupcoord_member_events",
                                       "Members joining, leaving, expiring, being fenced or replaced")
        self.connections_refused = r.counter("groupcoord_connections_refused",
                                             "Connections closed on arrival, by limit (max.connections, per IP)")
        self.connections_closed = r.counter("groupcoord_connections_closed",
                                            "Connections the server closed, by cause (bad frame, idle, slow frame)")
        self.log_append_time = r.timer("groupcoord_log_append_ms", "Coordinator record append until durable")
        # KIP-1263 offloaded assignor runs (Kafka's background-queue-time-ms-* / background-processing-time-ms-*;
        # background-thread-idle-ratio-avg is a gauge the worker pool registers).
        self.background_queue_time = r.timer(GROUP_METRICS + "background_queue_time_ms",
                                             "Offloaded assignor run: submitted until a worker starts it")
        self.background_processing_time = r.timer(GROUP_METRICS + "background_processing_time_ms",
                                                  "Offloaded assignor run: time in the worker")
        # Share groups (KIP-932): Kafka's names (coordinator/server/share_metrics.py says which), and ours
        # where Kafka has none.
        self.share_group_rebalances = r.counter(GROUP_METRICS + "share_group_rebalance_count",
                                                "Share group epoch bumps (Kafka's ShareGroupRebalances sensor)")
        self.share_acknowledgements = r.counter("kafka_server_share_group_metrics_record_acknowledgements",
                                                "Records acknowledged by share group members, by type")
        self.share_lock_timeouts = r.counter("kafka_server_share_partition_metrics_acquisition_lock_timeout",
                                             "Acquired records whose lock ran out, by share-partition")
        self.share_deliveries = r.counter("groupcoord_share_records_delivered",
                                          "Records handed to share group members, first deliveries and redeliveries")
        self.share_archived = r.counter("groupcoord_share_records_archived",
                                        "Records archived undelivered or unaccepted, by group and reason")
        self._rebalance_started: dict[str, float] = {}  # group id -> monotonic ms
        self._request_keys: dict[int, tuple[Labels, Labels]] = {}  # api key << 16 | version -> labels
        self._error_keys: dict[int, Labels] = {}

    def add_gauge(self, name: str, help: str, sample: Callable[[], dict[Labels, float]]) -> None:
        self.registry.gauge(name, help, sample)

    # ---- called by the server

    def on_request(self, api_key: int, version: int, elapsed_ms: float) -> None:
        keys = self._request_keys.get(api_key << 16 | version)  # one int key: no tuple built per request
        if keys is None:  # label sets built once per API and version: this runs for every request
            api_name = API_SPECS[api_key].name if api_key in API_SPECS else str(api_key)
            keys = self._request_keys[api_key << 16 | version] = (
                labels_of({"request": api_name, "version": version}), labels_of({"request": api_name}))
        counts = self.requests.values  # Counter.inc_key inlined: this runs for every request
        counts[keys[0]] = counts.get(keys[0], 0) + 1
        self.request_time.observe_key(keys[1], elapsed_ms)

    def on_heartbeats(self, version: int, error_code: int, count: int, elapsed_ms: float) -> None:
        """`count` Heartbeats of `version` answered `error_code` by the fast lane
        (coordinator/server/heartbeat_lane.py) in `elapsed_ms` together: counted as `on_request` and
        `on_group_response` count each one dispatch answers, each timed at the run's mean."""
        each = elapsed_ms / count
        keys = self._request_keys.get(HEARTBEAT_KEY << 16 | version)
        if keys is None:  # the first of this version: on_request builds its label sets
            self.on_request(HEARTBEAT_KEY, version, each)
            keys = self._request_keys[HEARTBEAT_KEY << 16 | version]
            more = count - 1
        else:
            more = count
        counts = self.requests.values
        counts[keys[0]] = counts.get(keys[0], 0) + more
        self.request_time.observe_key_repeated(keys[1], each, more)
        key = self._error_keys.get(error_code)
        if key is None:
            key = self._error_keys[error_code] = labels_of({"error": error_code})
        beats = self.heartbeats.values
        beats[key] = beats.get(key, 0) + count

    def on_group_event(self, name: str, group_id: str, fields: Mapping[str, Any], now_ms: float) -> None:
        if name == "rebalance_prepared":
            self.rebalances.inc(trigger=rebalance_trigger(str(fields.get("reason", ""))))
            self._rebalance_started.setdefault(group_id, now_ms)
        elif name == "join_completed":
            self.completed_rebalances.inc()
            if fields.get("state") == "Empty":
                self._finish_rebalance(group_id, now_ms)
        elif name == "group_stable":
            self._finish_rebalance(group_id, now_ms)
        elif name in ("member_joined", "member_left", "member_removed", "pending_member_expired",
                      "static_member_replaced", "member_refused"):
            self.member_events.inc(event=name)
        elif name == "offsets_expired":
            self.offset_expirations.inc(int(fields.get("partitions", 1)))
        elif name == "share_group_epoch_bumped":
            self.share_group_rebalances.inc()
        elif name == "group_expired":
            self._rebalance_started.pop(group_id, None)

    def on_group_response(self, response: Any) -> None:
        """Count what a group request did, from its response (only sent once its records are durable)."""
        kind = type(response).__name__
        if kind == "HeartbeatResponse":
            key = self._error_keys.get(response.error_code)
            if key is None:
                key = self._error_keys[response.error_code] = labels_of({"error": response.error_code})
            counts = self.heartbeats.values  # Counter.inc_key inlined: once per heartbeat
            counts[key] = counts.get(key, 0) + 1
        elif kind == "OffsetCommitResponse":  # a list's count(0): a generator per partition cost ~4% of a commit
            self.offset_commits.inc([p.error_code for t in response.topics for p in t.partitions].count(0))
        elif kind == "OffsetDeleteResponse" and response.error_code == 0:
            self.offset_deletions.inc(sum(1 for t in response.topics for p in t.partitions if p.error_code == 0))

    def _finish_rebalance(self, group_id: str, now_ms: float) -> None:
        started = self._rebalance_started.pop(group_id, None)
        if started is not None:
            self.rebalance_time.observe(now_ms - started)
