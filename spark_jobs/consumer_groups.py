"""The report's views of consumer-protocol groups (KIP-848), from their records (types 3-8, 16) and
the removal cause records the server writes for them (type 30000, value version 1).

What each record tells (docs/spec/consumer-protocol.md#records):
- ConsumerGroupMetadata (3): the group epoch, bumped by every membership or subscription change;
  one record per bump, so the epochs over time are these records.
- ConsumerGroupTargetAssignmentMetadata (6): an assignor run landed: its assignment epoch. With
  KIP-1263 batching one run may cover several group epochs; `epochs_covered` is the gap to the
  group's previous run (1 without batching).
- ConsumerGroupMemberMetadata (5): a member joined when its key appears (first time, or after a
  tombstone); a member whose record carries ClassicMemberMetadata is a classic-protocol member of
  the consumer group (a mixed group).
- ConsumerGroupCurrentMemberAssignment (8): the member's epoch and state; a member reconciled
  epoch E when it is first written STABLE (state 0) at member epoch E. Reconciliation time is that
  record's time minus the time of the run that produced assignment epoch E.
- ConsumerGroupRegularExpression (16): one regex resolution (issue 20's regex subscriptions).
- The cause records of the group's member removals: left (heartbeat -1, LeaveGroup of a classic
  member, a static member's -2 that ended in expiry), removed (an admin's LeaveGroup), expired
  (session or rebalance timeout), static_replaced (a static member taken over by a new member id).
  A static member's -2 alone is no removal: it either comes back (replaced) or expires (left).

Views: `consumer_epochs`, `consumer_assignment_runs`, `consumer_membership`,
`consumer_reconciliation`, and `consumer_groups` (one row per group with the figures above).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

CONSUMER_KINDS = ("consumer_group_metadata", "consumer_group_partition_metadata", "consumer_group_member_metadata",
                  "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
                  "consumer_group_current_member_assignment", "consumer_group_regular_expression")
VIEWS = ("consumer_epochs", "consumer_assignment_runs", "consumer_membership", "consumer_reconciliation",
         "consumer_groups")
#: The cause of a removal (coordinator.records.RemovalCause values) -> the report's event.
EVENT_OF_CAUSE = {"left": "left", "static_leave_expired": "left", "removed": "removed",
                  "session_expired": "expired", "rebalance_timeout": "expired", "replaced": "static_replaced"}
EVENTS = ("joined", "left", "removed", "expired", "static_replaced")


def _json_int(field: str) -> Column:
    return F.get_json_object("value_json", f"$.{field}").cast("long")


def _live(records: DataFrame, kind: str) -> DataFrame:
    return records.filter((F.col("kind") == kind) & ~F.col("tombstone"))


def _in_log_order(*keys: str) -> Any:
    return Window.partitionBy(*keys).orderBy("partition", "offset")


def consumer_views(records: DataFrame, cached: list[DataFrame] | None = None) -> dict[str, DataFrame]:
    """Every consumer-group view over the reader's rows (the cached ones of the report). The
    consumer-group and reason rows are taken out of them once, and they and the views the per-group
    one is built from are persisted (small next to the log) and added to ``cached``, for the caller
    to unpersist once the views are written."""
    records = _keep(records.filter(F.col("kind").isin(*CONSUMER_KINDS, "group_reason")).select(
        "kind", "group_id", "member_id", "partition", "offset", "timestamp", "tombstone", "value_json",
        "reason_member_id", "reason_cause", "stable_epoch"), cached)
    epochs = _live(records, "consumer_group_metadata").select(
        "group_id", "partition", "offset", "timestamp", _json_int("Epoch").alias("epoch"))
    runs = (_live(records, "consumer_group_target_assignment_metadata")
            .select("group_id", "partition", "offset", "timestamp",
                    _json_int("AssignmentEpoch").alias("assignment_epoch"))
            .withColumn("epochs_covered", F.col("assignment_epoch")
                        - F.lag("assignment_epoch").over(_in_log_order("group_id"))))

    member_rows = records.filter(F.col("kind") == "consumer_group_member_metadata").select(
        "group_id", "member_id", "partition", "offset", "timestamp", "tombstone",
        F.get_json_object("value_json", "$.InstanceId").alias("group_instance_id"),
        F.get_json_object("value_json", "$.ClientId").alias("client_id"),
        F.get_json_object("value_json", "$.ClassicMemberMetadata").isNotNull().alias("classic"))
    previous = F.lag("tombstone").over(_in_log_order("group_id", "member_id"))
    joins = (member_rows.withColumn("previous_tombstone", previous)
             .filter(~F.col("tombstone") & F.coalesce("previous_tombstone", F.lit(True)))
             .select("group_id", "member_id", "group_instance_id", "client_id", "timestamp",
                     F.lit("joined").alias("event"), "classic"))
    consumer_group_ids = records.filter(F.col("kind").isin(*CONSUMER_KINDS)).select("group_id").distinct()
    cause_event = F.element_at(F.create_map(*(F.lit(x) for kv in EVENT_OF_CAUSE.items() for x in kv)),
                               F.col("reason_cause"))
    removals = (records.filter((F.col("kind") == "group_reason") & ~F.col("tombstone")
                               & F.col("reason_cause").isin(*EVENT_OF_CAUSE))
                .join(consumer_group_ids, "group_id", "left_semi")
                .select("group_id", F.col("reason_member_id").alias("member_id"),
                        F.lit(None).cast("string").alias("group_instance_id"),
                        F.lit(None).cast("string").alias("client_id"), F.col("timestamp"),
                        cause_event.alias("event"), F.lit(None).cast("boolean").alias("classic")))
    membership = joins.unionByName(removals)

    # The reader folds these records (summary mode): a live STABLE write's member epoch is `stable_epoch`.
    stable = (records.filter((F.col("kind") == "consumer_group_current_member_assignment")
                             & F.col("stable_epoch").isNotNull())
              .groupBy("group_id", "member_id", F.col("stable_epoch").alias("epoch"))
              .agg(F.min("timestamp").alias("reconciled_ms")))
    landed = runs.groupBy("group_id", F.col("assignment_epoch").alias("epoch")).agg(
        F.min("timestamp").alias("target_ms"))
    reconciliation = (stable.join(landed, ["group_id", "epoch"])
                      .withColumn("reconcile_ms", F.col("reconciled_ms") - F.col("target_ms"))
                      .filter(F.col("reconcile_ms") >= 0))

    epochs, runs, membership, reconciliation = (_keep(df, cached) for df in (epochs, runs, membership,
                                                                              reconciliation))
    per_group = _per_group(consumer_group_ids, epochs, runs, membership, reconciliation,
                           _live(records, "consumer_group_regular_expression"))
    return {"consumer_epochs": epochs, "consumer_assignment_runs": runs, "consumer_membership": membership,
            "consumer_reconciliation": reconciliation, "consumer_groups": per_group}


def _per_group(group_ids: DataFrame, epochs: DataFrame, runs: DataFrame, membership: DataFrame,
               reconciliation: DataFrame, regexes: DataFrame) -> DataFrame:
    """One row per consumer group from one aggregate over the union of its source rows, each tagged
    with its source (one shuffle, where an aggregate per source joined to the group ids took about
    ten). A union keeps each source's partitions, so percentile_approx sees the reconcile times
    partitioned as before; the other sources' nulls are left out of it. No order: the report reads
    it back sorted by group id."""
    def rows(df: DataFrame, source: str, **values: Column) -> DataFrame:
        columns = {"epoch": "long", "epochs_covered": "long", "event": "string", "classic": "boolean",
                   "reconcile_ms": "long"}
        return df.select("group_id", F.lit(source).alias("source"),
                         *(values.get(c, F.lit(None)).cast(t).alias(c) for c, t in columns.items()))

    tagged = (rows(group_ids, "group").unionByName(rows(epochs, "epoch", epoch=F.col("epoch")))
              .unionByName(rows(runs, "run", epochs_covered=F.col("epochs_covered")))
              .unionByName(rows(membership, "member", event=F.col("event"), classic=F.col("classic")))
              .unionByName(rows(reconciliation, "reconcile", reconcile_ms=F.col("reconcile_ms")))
              .unionByName(rows(regexes, "regex")))
    source = F.col("source")
    count = lambda name, when: F.count(F.when(when, 1)).alias(name)  # noqa: E731
    # A source with no row of a group gives 0 counts; its max/percentile columns stay null, as the
    # left joins left them.
    return (tagged.groupBy("group_id").agg(
                count("group", source == "group"), count("epoch_bumps", source == "epoch"),
                F.max("epoch").alias("last_epoch"), count("assignor_runs", source == "run"),
                F.max("epochs_covered").alias("max_epochs_per_run"),
                *(count(e, (source == "member") & (F.col("event") == e)) for e in EVENTS),
                F.max(F.col("classic").cast("int")).alias("mixed"),
                F.percentile_approx("reconcile_ms", 0.5).alias("reconcile_p50_ms"),
                F.max("reconcile_ms").alias("reconcile_max_ms"), count("regex_resolutions", source == "regex"))
            .filter(F.col("group") > 0).drop("group")
            .withColumn("mixed", F.coalesce(F.col("mixed") == 1, F.lit(False))))


def _keep(df: DataFrame, cached: list[DataFrame] | None) -> DataFrame:
    if cached is None:
        return df
    kept = df.persist(StorageLevel.MEMORY_AND_DISK)
    cached.append(kept)
    return kept


def summarize_consumer_groups(groups: pa.Table, reconcile_ms: pa.Table, per_group_limit: int = 50) -> dict[str, Any]:
    """The summary's `consumer_groups` section from the `consumer_groups` view and the reconcile times."""
    rows = groups.to_pylist()
    totals = {name: int(sum(r[name] or 0 for r in rows)) for name in
              ("epoch_bumps", "assignor_runs", *EVENTS, "regex_resolutions")}
    times = sorted(v for v in reconcile_ms.column("reconcile_ms").to_pylist() if v is not None)
    runs = totals["assignor_runs"]
    summary: dict[str, Any] = {
        "groups": len(rows), "mixed_groups": sum(bool(r["mixed"]) for r in rows), **totals,
        "epochs_per_run": round(totals["epoch_bumps"] / runs, 2) if runs else None,
        "reconcile_ms": {"count": len(times), "p50": _quantile(times, 0.5), "p95": _quantile(times, 0.95),
                         "max": times[-1] if times else None},
    }
    if len(rows) <= per_group_limit:
        summary["per_group"] = {r["group_id"]: {k: v for k, v in r.items() if k != "group_id"} for r in rows}
    return summary


def _quantile(ordered: list[int], q: float) -> int | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
