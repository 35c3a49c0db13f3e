"""Group history reports from a coordinator log, with Spark.

    groupcoord report --log-dir DATA_DIR --out OUT_DIR [--master local[*]]
    spark-submit spark_jobs/group_history.py --log-dir DATA_DIR --out OUT_DIR     # a cluster: --master URL
    make report LOG_DIR=... OUT=...

Reads every `__consumer_offsets` segment under DATA_DIR (or an exported directory of segments)
through the `consumer_offsets` data source (the server's record codec; offset commits come folded
per key and per minute, `spark_jobs.summarize`; each GroupMetadata record comes with its place in
its group's history, computed in one ordered pass per log partition, `spark_jobs.sequence`), and
writes to OUT_DIR:
one Parquet table per view, `summary.json`, and `report.html` (self-contained: inline SVG).

What the log can tell, and how each view reads it:

- A classic group's GroupMetadata record is written when a rebalance completes (at the leader's
  SyncGroup, or when the group empties), so each new generation in the log is one completed
  rebalance. `current_state_timestamp` in it is when the join phase completed; the record's own
  timestamp is when the group became stable. A rewrite with the same generation is a static
  member replaced without a rebalance (KIP-345).
- The start of a rebalance is only in the log when a client gave a reason (KIP-800, our record
  type 30000): the earliest reason since the previous GroupMetadata record. Otherwise the
  duration covers the sync phase only (`start_source` says which).
- Who left how: a member missing from the next generation left, was removed by an admin, or
  expired (session or rebalance timeout), as the server's cause record of its removal says (type
  30000 value version 1, written for every removal). In a log from before cause records, it left
  if a LeaveGroup reason names it, else it expired.
- Current state follows replay: newest value per key by offset, tombstones remove the key.

Nothing here imports the server; only `coordinator.records` and `coordinator.log` (via
`spark_jobs.decode`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import structlog
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_jobs.consumer_groups import VIEWS as CONSUMER_VIEWS
from spark_jobs.consumer_groups import consumer_views, summarize_consumer_groups
from spark_jobs.decode import find_segments, log_end_offsets
from spark_jobs.figures import group_sums, top_counts
from spark_jobs.reader import local_session, read_log
from spark_jobs.share_groups import member_rows as share_member_rows
from spark_jobs.share_groups import share_summary
from spark_jobs.summarize import KEY_KIND, MINUTE_KIND
from spark_jobs.transactions_report import transaction_summary

log = structlog.get_logger(__name__)

#: Columns of the data source that no view reads: left out of the cached rows.
UNUSED_COLUMNS = ("segment", "record_type", "value_version", "reason_instance_id")
#: Views whose row order means something (top first, by time): (column, descending) pairs.
VIEW_ORDER: dict[str, tuple[tuple[str, bool], ...]] = {"top_groups": (("rebalances", True), ("group_id", False)),
                                                       "rebalances_per_hour": (("hour", False),)}

#: Views written at once. Each write is a few small stages; between them the driver plans, schedules
#: and commits files while the cores wait, so more jobs in flight than cores keeps them busy.
WRITE_THREADS = 4

VIEWS = ("rebalance_timeline", "rebalances_per_hour", "top_groups", "membership_events", "churn_by_member",
         "churn_by_instance", "commits_per_minute", "offset_progress", "current_offsets", "current_groups",
         *CONSUMER_VIEWS)


# ---- the views --------------------------------------------------------------------------------------


def group_writes(records: DataFrame) -> DataFrame:
    """Every GroupMetadata record, with its place in its group's history: the reader computes that in
    one ordered pass over each log partition (`groups=history`, `spark_jobs.sequence`)."""
    return records.filter(F.col("kind") == "group_metadata")


def rebalance_timeline(gm: DataFrame) -> DataFrame:
    """One row per completed rebalance (a new generation in the log)."""
    # What every generation has (reasons, trigger, counts, member lists) gets its empty value where the
    # reader's column is null, so the view's readers need no null checks; the Parquet schema still says
    # nullable, as Spark writes every column.
    t = gm.filter(F.col("write") == "generation").withColumn("reasons", F.coalesce("reasons", F.array()))
    first_reason = F.get(F.col("reasons"), 0)
    start_ms = rebalance_start_ms()
    return t.select(
        "group_id", "partition", "offset", "generation", F.coalesce("trigger", F.lit("")).alias("trigger"),
        first_reason["reason"].alias("reason"), first_reason["api"].alias("reason_api"),
        F.col("reasons.reason").alias("all_reasons"), start_ms.alias("start_ms"),
        F.when(first_reason.isNotNull(), "reason").otherwise("join_completed").alias("start_source"),
        F.col("current_state_timestamp").alias("join_completed_ms"),
        F.col("timestamp").alias("stable_ms"), "end_ms", (F.col("timestamp") - start_ms).alias("rebalance_duration_ms"),
        (F.col("end_ms") - F.col("timestamp")).alias("generation_lifetime_ms"),
        F.coalesce("member_count", F.lit(0)).alias("member_count"), "leader", "protocol_type", "protocol",
        F.coalesce("joined", F.array().cast("array<string>")).alias("joined"), "left", "expired", "static_rejoined",
        F.coalesce("removed", F.array().cast("array<string>")).alias("removed"),
        F.coalesce("static_members", F.lit(0)).alias("static_members"),
    )


def rebalance_start_ms() -> Column:
    """When a rebalance started: its first reason (KIP-800) if earlier than the join's end, else the join's end."""
    first_reason = F.get(F.col("reasons"), 0)
    start = F.least(first_reason["reason_ms"], F.col("current_state_timestamp"))
    return F.when(first_reason.isNotNull(), start).otherwise(F.col("current_state_timestamp"))


def top_groups(gm: DataFrame, facts: dict[str, Any]) -> DataFrame:
    """Per group with a rebalance: the timeline's figures and the static replacements absorbed, in one
    aggregate over the generation and replacement writes (one shuffle, where the timeline's aggregate
    and the replacements' joined took three). No order: `_read_view` sorts it (`VIEW_ORDER`)."""
    generation = F.col("write") == "generation"
    duration = F.when(generation, F.col("timestamp") - rebalance_start_ms())
    as_of = facts.get("last_ms") or 0
    hours = (as_of - (facts.get("first_ms") or as_of)) / 3_600_000.0
    return (gm.filter(F.col("write").isin("generation", "static_replacement")).groupBy("group_id").agg(
                F.count(F.when(generation, 1)).alias("rebalances"), F.avg(duration).alias("avg_rebalance_ms"),
                F.max(duration).alias("max_rebalance_ms"),
                F.max(F.when(generation, F.col("generation"))).alias("last_generation"),
                F.max(F.when(generation, F.col("timestamp"))).alias("last_rebalance_ms"),
                F.count(F.when(~generation, 1)).alias("static_replacements_absorbed"))
            .filter(F.col("rebalances") > 0)
            .withColumn("rebalances_per_hour", F.col("rebalances") / F.greatest(F.lit(1.0), F.lit(hours))))


def membership_events(gm: DataFrame) -> DataFrame:
    """joined / left / removed / expired / static_rejoined (caused a rebalance) / static_replaced (absorbed)."""
    e = gm.filter(F.col("write").isin("generation", "static_replacement")).select(
        "group_id", "offset", "timestamp", "generation", "write", F.explode("events").alias("e"))
    return e.select("group_id", "offset", "timestamp", "generation", F.coalesce("e.event", F.lit("")).alias("event"),
                    "e.member_id", "e.group_instance_id", "e.client_id", "e.client_host",
                    F.coalesce(F.col("write") == "generation", F.lit(False)).alias("caused_rebalance"))


def churn_by_member(events: DataFrame) -> DataFrame:
    count = lambda name: F.sum(F.when(F.col("event") == name, 1).otherwise(0)).alias(name)  # noqa: E731
    return events.groupBy("group_id", "member_id").agg(
        F.first("group_instance_id", ignorenulls=True).alias("group_instance_id"),
        F.first("client_id", ignorenulls=True).alias("client_id"),
        F.first("client_host", ignorenulls=True).alias("client_host"),
        count("joined"), count("left"), count("removed"), count("expired"), count("static_replaced"),
        count("static_rejoined"),
        F.min("timestamp").alias("first_event_ms"), F.max("timestamp").alias("last_event_ms"))


def churn_by_instance(events: DataFrame) -> DataFrame:
    """KIP-345's saving per static instance: replacements absorbed vs rebalances its comings and goings caused."""
    e = events.filter(F.col("group_instance_id").isNotNull())
    gone = F.col("event").isin("left", "removed", "expired", "static_rejoined")
    return e.groupBy("group_id", "group_instance_id").agg(
        F.countDistinct("member_id").alias("member_ids"),
        F.sum(F.when(F.col("event") == "static_replaced", 1).otherwise(0)).alias("replacements_absorbed"),
        F.sum(F.when(gone & F.col("caused_rebalance"), 1).otherwise(0)).alias("rebalances_caused"),
        F.sum(F.when(F.col("event") == "left", 1).otherwise(0)).alias("left"),
        F.sum(F.when(F.col("event") == "removed", 1).otherwise(0)).alias("removed"),
        F.sum(F.when(F.col("event") == "expired", 1).otherwise(0)).alias("expired"),
        F.sum(F.when(F.col("event") == "static_rejoined", 1).otherwise(0)).alias("rejoined_with_rebalance"))


def log_order(offset: str = "offset") -> Column:
    """(partition, ``offset``) as one long, the order replay applies records in.

    min_by/max_by over a struct make Spark sort every row (a struct buffer is not fixed-width,
    so no hash aggregation); a long keeps them hash aggregates. Offsets stay below 2^48."""
    return F.col("partition").cast("long") * F.lit(1 << 48) + F.col(offset)


def offset_views(spark: SparkSession, records: DataFrame, as_of_ms: int, ends: dict[tuple[str, int], int],
                 cached: list[DataFrame]) -> dict[str, DataFrame]:
    """Offset views from the summarized commits (`spark_jobs.summarize`): the reader has already folded
    each segment's commits per key and per minute, so these combine a few rows per key."""
    minutes = records.filter(F.col("kind") == MINUTE_KIND)
    # A minute split between two segments has two rows: its partitions are unioned, not added.
    per_minute = minutes.groupBy("group_id", "topic", F.date_trunc("minute", F.timestamp_millis("timestamp"))
                                 .alias("minute")).agg(
        F.sum("commit_count").alias("commits"),
        F.size(F.array_distinct(F.flatten(F.collect_list("partitions")))).cast("long").alias("partitions"))
    key = ["group_id", "topic", "topic_partition"]
    keys = records.filter(F.col("kind") == KEY_KIND)
    order = log_order()
    # Compaction as replay does it: the newest record of a key wins, a tombstone removes the key.
    per_key = keys.groupBy(*key).agg(
        F.sum("commit_count").alias("commits"),
        F.min("first_commit_ms").alias("first_commit_ms"),
        F.max("last_commit_ms").alias("last_commit_ms"),
        F.min_by("first_committed_offset", log_order("first_live_offset")).alias("first_offset"),
        F.max_by("last_committed_offset", log_order("last_live_offset")).alias("last_offset"),
        *(F.max_by(c, order).alias(f"l_{c}") for c in ("tombstone", "committed_offset", "leader_epoch", "metadata",
                                                        "commit_timestamp", "expire_timestamp", "offset"))
    ).persist(StorageLevel.MEMORY_AND_DISK)  # read by both views
    cached.append(per_key)
    current = per_key.filter(~F.col("l_tombstone")).select(
        *key, F.col("l_committed_offset").alias("committed_offset"), F.col("l_leader_epoch").alias("leader_epoch"),
        F.col("l_metadata").alias("metadata"), F.col("l_commit_timestamp").alias("commit_timestamp"),
        F.col("l_expire_timestamp").alias("expire_timestamp"), F.col("l_offset").alias("log_offset"))
    # From Arrow: a DataFrame of Python rows would start Python workers to read them.
    end_df = spark.createDataFrame(pa.table({
        "topic": pa.array([t for t, _ in ends], pa.string()),
        "topic_partition": pa.array([p for _, p in ends], pa.int32()),
        "log_end_offset": pa.array(list(ends.values()), pa.int64())}))
    # Whether `current` has the key, without joining it back: a key is one row of per_key, current
    # those not ending in a tombstone (a null key would match nothing in a join).
    is_current = F.coalesce(~F.col("l_tombstone"), F.lit(False))
    for column in key:
        is_current = is_current & F.col(column).isNotNull()
    progress = per_key.filter(F.col("commits") > 0).select(*key, "commits", "first_commit_ms", "last_commit_ms",
                                                           "first_offset", "last_offset", "l_tombstone")
    span_s = (F.col("last_commit_ms") - F.col("first_commit_ms")) / 1000.0
    progress = (progress.withColumn("offsets_per_s", F.when(span_s > 0, (F.col("last_offset") - F.col("first_offset"))
                                                            / span_s))
                        .withColumn("ms_since_last_commit", F.lit(as_of_ms) - F.col("last_commit_ms"))
                        .withColumn("current", is_current)
                        .join(end_df, ["topic", "topic_partition"], "left")
                        .withColumn("lag", F.when(
                            F.col("current") & F.col("log_end_offset").isNotNull(),
                            F.greatest(F.lit(0), F.col("log_end_offset") - F.col("last_offset"))))
                        .drop("l_tombstone"))
    current = current.join(end_df, ["topic", "topic_partition"], "left").withColumn(
        "lag", F.greatest(F.lit(0), F.col("log_end_offset") - F.col("committed_offset")))
    return {"commits_per_minute": per_minute, "offset_progress": progress, "current_offsets": current}


def current_groups(gm: DataFrame, records: DataFrame) -> DataFrame:
    """Each group as its latest GroupMetadata record leaves it (none if that is a tombstone)."""
    reasons = (records.filter(F.col("kind") == "group_reason").groupBy("group_id")
               .agg(F.max_by(F.struct("tombstone", "reason_api", "reason", "reason_member_id", "reason_timestamp"),
                             log_order()).alias("r")))
    return (gm.filter(F.col("current_members").isNotNull() & ~F.col("tombstone"))
              .join(reasons, "group_id", "left")
              .select("group_id", F.when(F.col("member_count") > 0, "Stable").otherwise("Empty").alias("state"),
                      "generation", "protocol_type", "protocol", "leader", "member_count",
                      F.col("current_members.member_id").alias("member_ids"),
                      F.col("current_members.group_instance_id").alias("group_instance_ids"),
                      F.col("timestamp").alias("since_ms"),
                      F.when(~F.col("r.tombstone"), F.col("r.reason")).alias("last_reason"),
                      F.when(~F.col("r.tombstone"), F.col("r.reason_api")).alias("last_reason_api")))


def log_facts(records: DataFrame) -> dict[str, Any]:
    """Record counts, time range, partitions and groups of the log, for the summary.

    One small aggregate per (kind, partition, group) is collected and folded here: one Spark job
    and one shuffle, where a global aggregate with two distinct counts plus a per-kind count took
    two jobs and four shuffles. It is the first action on the cached rows, so it also reads the log."""
    # A per-key commit row stands for record_count records; every other row (minutes aside) for one.
    rows = records.filter(F.col("kind") != MINUTE_KIND)
    n = F.coalesce("record_count", F.lit(1))
    kind = F.when(F.col("kind") == KEY_KIND, "offset_commit").otherwise(F.col("kind"))
    parts = rows.groupBy(kind.alias("kind"), "partition", "group_id").agg(
        F.sum(n).alias("records"), F.min(F.coalesce("first_ms", "timestamp")).alias("first_ms"),
        F.max(F.coalesce("last_ms", "timestamp")).alias("last_ms"),
        F.sum(F.coalesce("tombstone_count", F.col("tombstone").cast("long"))).alias("tombstones")).collect()
    by_kind: dict[str, int] = {}
    for r in sorted(parts, key=lambda r: r["kind"]):
        by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + r["records"]
    firsts = [r["first_ms"] for r in parts if r["first_ms"] is not None]
    lasts = [r["last_ms"] for r in parts if r["last_ms"] is not None]
    tombstones = [r["tombstones"] for r in parts if r["tombstones"] is not None]
    warn_groups_in_several_partitions(parts)
    # Null where Spark's aggregates over no rows (or only nulls) are null, as before.
    return {"records": sum(r["records"] for r in parts), "first_ms": min(firsts) if firsts else None,
            "last_ms": max(lasts) if lasts else None,
            "partitions": len({r["partition"] for r in parts if r["partition"] is not None}),
            "groups_seen": len({r["group_id"] for r in parts if r["group_id"] is not None}),
            "tombstones": sum(tombstones) if tombstones else None, "by_kind": by_kind}


def warn_groups_in_several_partitions(parts: list[Row]) -> None:
    """The reader follows a group's history within one log partition, where Kafka keeps a group; a
    group found in several (logs of different clusters read together?) gets one history in each."""
    seen: dict[str, set[int]] = {}
    for r in parts:
        if r["kind"] in ("group_metadata", "group_reason") and r["group_id"] is not None:
            seen.setdefault(r["group_id"], set()).add(r["partition"])
    split = sorted(group for group, partitions in seen.items() if len(partitions) > 1)
    if split:
        log.warning("groups_in_several_partitions", groups=split[:10], count=len(split))


def build_views(spark: SparkSession, records: DataFrame, log_dir: Path,
                cached: list[DataFrame] | None = None) -> tuple[dict[str, DataFrame], dict]:
    """Every view, plus facts about the log (record counts, time range) for the summary.

    Intermediate frames it persists are added to ``cached``, for the caller to unpersist."""
    cached = cached if cached is not None else []
    facts = log_facts(records)
    as_of = facts.get("last_ms") or 0
    # The GroupMetadata rows are read by seven views and the membership events by three: kept apart
    # (a few percent of the cached rows), each view scans them instead of filtering every cached row
    # and exploding the events again.
    gm = group_writes(records).persist(StorageLevel.MEMORY_AND_DISK)
    timeline = rebalance_timeline(gm)
    events = membership_events(gm).persist(StorageLevel.MEMORY_AND_DISK)
    cached += [gm, events]
    per_hour = timeline.groupBy(F.date_trunc("hour", F.timestamp_millis("stable_ms")).alias("hour")).agg(
        F.count(F.lit(1)).alias("rebalances"), F.countDistinct("group_id").alias("groups"),
        F.sum(F.when(F.col("trigger") == "member_expired", 1).otherwise(0)).alias("expiries"))
    views = {"rebalance_timeline": timeline, "rebalances_per_hour": per_hour, "top_groups": top_groups(gm, facts),
             "membership_events": events, "churn_by_member": churn_by_member(events),
             "churn_by_instance": churn_by_instance(events),
             **offset_views(spark, records, as_of, log_end_offsets(log_dir) if log_dir.is_dir() else {}, cached),
             "current_groups": current_groups(gm, records), **consumer_views(records, cached)}
    return views, facts


# ---- summary ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class ViewData:
    """What the summary and the page need from the written views, each view read back once (only the
    columns needed) and folded here in Python: one small Spark job per view, where a Spark query per
    figure took about thirty (the views are small; the jobs' fixed cost was the time)."""

    timeline: pa.Table  # rebalance_timeline, the columns the summary and the timeline table show
    durations: Row | None  # Spark's percentile_approx over the timeline (p) and max, kept bit for bit
    per_hour: list[Row]  # rebalances_per_hour, ordered by hour
    top_groups: list[dict[str, Any]]  # top_groups, ordered
    events: pa.Table  # membership_events: group_id, event
    instances: list[dict[str, Any]]  # churn_by_instance
    per_minute: pa.Table  # commits_per_minute: minute (epoch µs), commits
    progress: pa.Table  # offset_progress: group_id, commits
    current_offsets: pa.Table  # current_offsets: lag
    current_groups: list[dict[str, Any]]  # current_groups, ordered by group_id
    consumer_groups: pa.Table  # consumer_groups: one row per consumer-protocol group
    consumer_reconcile: pa.Table  # consumer_reconciliation: reconcile_ms
    consumer_epochs: pa.Table  # consumer_epochs: group_id, timestamp, epoch


TIMELINE_COLUMNS = ("group_id", "generation", "trigger", "reason", "start_ms", "stable_ms", "rebalance_duration_ms",
                    "start_source", "member_count", "leader", "protocol", "joined", "left", "removed", "expired")


def read_back(spark: SparkSession, out: Path) -> ViewData:
    view = functools.partial(_read_view, spark, out)
    timeline = view("rebalance_timeline")
    minutes = view("commits_per_minute").select(F.unix_micros("minute").alias("minute"), "commits")
    return ViewData(**in_parallel({
        "timeline": lambda: timeline.select(*TIMELINE_COLUMNS).toArrow(),
        "durations": lambda: timeline.agg(F.percentile_approx("rebalance_duration_ms", [0.5, 0.95]).alias("p"),
                                          F.max("rebalance_duration_ms").alias("max")).first(),
        "per_hour": lambda: view("rebalances_per_hour").limit(5000).collect(),
        "top_groups": lambda: view("top_groups").toArrow().to_pylist(),
        "events": lambda: view("membership_events").select("group_id", "event").toArrow(),
        "instances": lambda: view("churn_by_instance").toArrow().to_pylist(), "per_minute": minutes.toArrow,
        "progress": lambda: view("offset_progress").select("group_id", "commits").toArrow(),
        "current_offsets": lambda: view("current_offsets").select("lag").toArrow(),
        "current_groups": lambda: sorted(view("current_groups").toArrow().to_pylist(), key=lambda r: r["group_id"]),
        "consumer_groups": lambda: view("consumer_groups").orderBy("group_id").toArrow(),
        "consumer_reconcile": lambda: view("consumer_reconciliation").select("reconcile_ms").toArrow(),
        "consumer_epochs": lambda: view("consumer_epochs").select("group_id", "timestamp", "epoch").toArrow()}))


def in_parallel(tasks: dict[str, Callable[[], Any]], threads: int = 2) -> dict[str, Any]:
    """Each task's result, two Spark jobs at a time. The jobs here are small: one alone leaves the cores
    idle while the driver plans it, schedules it and commits its files; a second one fills that."""
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = {name: pool.submit(task) for name, task in tasks.items()}
        return {name: future.result() for name, future in futures.items()}


def summarize(data: ViewData, facts: dict, log_dir: Path, segments: int) -> dict[str, Any]:
    timeline, durations = data.timeline, data.durations
    p = (durations["p"] or [None, None]) if durations else [None, None]
    churn = top_counts(data.events["event"].to_pylist())
    absorbed = sum(r["replacements_absorbed"] or 0 for r in data.instances)
    caused = sum(r["rebalances_caused"] or 0 for r in data.instances)
    lag = pc.sum(data.current_offsets["lag"]).as_py()
    summary: dict[str, Any] = {
        "log": {"path": str(log_dir), "segments": segments, "records": facts.get("records", 0),
                "partitions": facts.get("partitions", 0), "tombstones": facts.get("tombstones") or 0,
                "by_kind": facts.get("by_kind", {}), "first_timestamp_ms": facts.get("first_ms"),
                "last_timestamp_ms": facts.get("last_ms")},
        "groups": {"seen": facts.get("groups_seen", 0), **top_counts(r["state"] for r in data.current_groups)},
        "rebalances": {"total": timeline.num_rows, "by_trigger": top_counts(timeline["trigger"].to_pylist()),
                       "reasons": top_counts(r for r in timeline["reason"].to_pylist() if r is not None),
                       "duration_ms": {"p50": p[0], "p95": p[1], "max": durations["max"] if durations else None},
                       "static_replacements_absorbed": int(absorbed),
                       "rebalances_caused_by_static_members": int(caused)},
        "membership": churn,
        "offsets": {"commit_records": facts.get("by_kind", {}).get("offset_commit", 0),
                    "current_offsets": data.current_offsets.num_rows,
                    "total_lag": int(lag) if lag is not None else None},
        "top_groups": data.top_groups[:10],
        "consumer_groups": summarize_consumer_groups(data.consumer_groups, data.consumer_reconcile),
    }
    summary["commits"] = summary["offsets"]["commit_records"]
    if facts.get("groups_seen", 0) <= 50:  # small logs: per-group figures, handy for checks and tests
        generations: dict[str, list[dict[str, Any]]] = {}
        for r in timeline.select(["group_id", "generation", "trigger", "reason"]).to_pylist():
            generations.setdefault(r.pop("group_id"), []).append(r)
        per_group: dict[str, Any] = {
            group: {"rebalances": len(gens), "static_replacements": 0, "commits": 0,
                    "generations": sorted(gens, key=lambda g: g["generation"])}
            for group, gens in sorted(generations.items())}
        for group, commits in group_sums(data.progress, "group_id", "commits"):
            per_group.setdefault(group, {})["commits"] = int(commits)
        for r in data.top_groups:
            per_group.setdefault(r["group_id"], {})["static_replacements"] = int(r["static_replacements_absorbed"])
        summary["per_group"] = per_group
    return summary


# ---- running it -------------------------------------------------------------------------------------


class Phases:
    """Wall time of each step of the job, logged as it ends and kept for the summary (`phase_seconds`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def done(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._last, 2)
        self._last = now
        log.info("phase_done", phase=name, seconds=self.seconds[name])


def run(spark: SparkSession, log_dir: Path, out: Path, html: bool = True) -> dict[str, Any]:
    started = time.monotonic()
    phases = Phases()
    segments = find_segments(log_dir)
    if not segments:
        raise FileNotFoundError(f"no __consumer_offsets segments under {log_dir}")
    out.mkdir(parents=True, exist_ok=True)
    # Decoding is the expensive part (Python): decode once, keep the rows for every view, without
    # the columns no view reads (building the cache costs the JVM time per column and row). Commits
    # come summarized per key and minute, and GroupMetadata records with their place in their group's
    # history instead of their member lists: the cache holds about a twentieth of the records.
    records = (read_log(spark, log_dir, commits="summary", groups="history").drop(*UNUSED_COLUMNS)
               .persist(StorageLevel.MEMORY_AND_DISK))
    cached: list[DataFrame] = []
    views, facts = build_views(spark, records, log_dir, cached)
    phases.done("read")  # the facts are the first action: the log is read and cached there
    in_parallel({name: functools.partial(write_view, views[name], out / name) for name in VIEWS}, WRITE_THREADS)
    phases.done("views")
    share_groups = share_summary(log_dir, share_member_rows(records), out)  # spark_jobs/share_groups.py
    records.unpersist()
    for df in cached:
        df.unpersist()  # everything below reads the Parquet
    # The summary and the HTML page read the views back: small tables, instead of recomputing them.
    data = read_back(spark, out)
    phases.done("read_back")
    summary = summarize(data, facts, log_dir, len(segments))
    summary["transactions"] = transaction_summary(segments)  # spark_jobs/transactions_report.py
    summary["share_groups"] = share_groups
    phases.done("summary")
    summary["seconds"] = round(time.monotonic() - started, 2)
    summary["phase_seconds"] = phases.seconds  # the page embeds them up to here; summary.json has them all
    if html:
        from spark_jobs.html_report import render

        (out / "report.html").write_text(render(data, summary))
        phases.done("html")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    log.info("report_written", out=str(out), records=facts.get("records"), seconds=summary["seconds"])
    return summary


def write_view(view: DataFrame, path: Path) -> None:
    started = time.monotonic()
    view.write.mode("overwrite").parquet(str(path))
    log.info("view_written", view=path.name, seconds=round(time.monotonic() - started, 2))


def _read_view(spark: SparkSession, out: Path, name: str) -> DataFrame:
    view = spark.read.parquet(str(out / name))
    order = VIEW_ORDER.get(name)
    if not order:
        return view
    return view.orderBy(*(F.desc(c) if descending else F.asc(c) for c, descending in order))  # files: no set order


def session(master: str = "local[*]") -> SparkSession:
    return local_session(master)


def build_report(spark: SparkSession, log_dir: str | Path, out: str | Path, html: bool = True) -> dict[str, Any]:
    """The whole job on an existing session: Parquet views, summary.json and report.html in ``out``."""
    return run(spark, Path(log_dir).resolve(), Path(out).resolve(), html)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="group_history", description="Group history reports from a coordinator log.")
    add_arguments(parser)
    return parser.parse_args(argv)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-dir", type=Path, required=True,
                        help="a data dir, a __consumer_offsets-N dir, a segment file, or a dir of exported segments")
    parser.add_argument("--out", type=Path, required=True, help="where the Parquet tables, summary and HTML go")
    parser.add_argument("--master", default="local[*]", help="Spark master when not run by spark-submit")
    parser.add_argument("--no-html", action="store_true", help="skip report.html")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = local_session(args.master)
    try:
        summary = run(spark, args.log_dir.resolve(), args.out.resolve(), html=not args.no_html)
    finally:
        spark.stop()
    print(json.dumps({k: summary[k] for k in ("log", "rebalances", "seconds")}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
