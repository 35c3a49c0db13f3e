"""`groups=history` (`spark_jobs.sequence`): each group's GroupMetadata writes followed in log order,
one pass per log partition, give what the earlier window formulation over every record gave.

The reference below is that formulation (a Spark window per group over each GroupMetadata row with
its whole member list, reasons attributed by a second window), kept here to hold the one-pass
reader to it. Its instance-id lookups are made null-safe (`_has`): plain `array_contains` answers
null when the array holds a dynamic member's null id, which the report used to take for "no".
It reads the plain one-row-per-record mode.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from spark_jobs.rows import COLUMNS, MEMBER_FIELDS, arrow_schema
from spark_jobs.sequence import HISTORY_COLUMNS, read_history
from spark_jobs.summarize import SUMMARY_COLUMNS

from .segments import whole_and_cut

pytestmark = [pytest.mark.spark]


# ---- the window formulation the one-pass history replaced -----------------------------------------

def _window_sequence(records):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fields = ("member_id", "group_instance_id", "client_id", "client_host")
    members_type = "array<struct<" + ",".join(f"{name}:string" for name in fields) + ">>"
    members = F.coalesce(F.transform("members", lambda m: F.struct(*(m[name].alias(name) for name in fields))),
                         F.array().cast(members_type))
    gm = records.filter(F.col("kind") == "group_metadata").select(
        "group_id", "partition", "offset", "timestamp", "tombstone", "generation", "protocol_type", "protocol",
        "leader", "current_state_timestamp", members.alias("members"))
    w = Window.partitionBy("group_id").orderBy("partition", "offset")
    gm = (gm.withColumn("prev_generation", F.lag("generation").over(w))
            .withColumn("prev_tombstone", F.lag("tombstone").over(w))
            .withColumn("prev_members", F.lag("members").over(w))
            .withColumn("latest", F.lead("offset").over(w).isNull()))
    fresh = F.col("prev_generation").isNull() | F.col("prev_tombstone")
    write = (F.when(F.col("tombstone"), "deleted").when(F.col("generation") == 0, "created")
              .when(~fresh & (F.col("generation") == F.col("prev_generation")), "static_replacement")
              .otherwise("generation"))
    prev = F.when(fresh, F.array().cast(members_type)).otherwise(F.col("prev_members"))
    gm = gm.select("*", write.alias("write"), prev.alias("prev"),
                   F.col("members.member_id").alias("ids"), prev["member_id"].alias("prev_ids"))
    return gm.select(
        "group_id", "partition", "offset", "timestamp", "tombstone", "generation", "protocol_type", "protocol",
        "leader", "current_state_timestamp", "prev_generation", "prev_tombstone", "write",
        F.filter("members", lambda m: ~F.array_contains(F.col("prev_ids"), m["member_id"])).alias("joined"),
        F.filter("prev", lambda m: ~F.array_contains(F.col("ids"), m["member_id"])).alias("left"),
        F.size("members").alias("member_count"), F.size("prev").alias("prev_member_count"),
        F.size(F.filter("members", lambda m: m["group_instance_id"].isNotNull())).alias("static_members"),
        F.when(F.col("latest"), F.col("members")).alias("current_members"))


def _window_reasons(records, gm):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # a removal's cause record without a text is not a KIP-800 reason
    cause_only = F.col("reason_cause").isNotNull() & (F.coalesce("reason", F.lit("")) == "")
    reasons = records.filter((F.col("kind") == "group_reason") & ~F.col("tombstone") & ~cause_only).select(
        "group_id", "partition", "offset", F.lit(None).cast("string").alias("write"),
        F.struct(F.col("reason_timestamp").alias("reason_ms"), F.col("reason_api").alias("api"),
                 F.col("reason_member_id").alias("member_id"),
                 F.col("reason_instance_id").alias("group_instance_id"), "reason").alias("r"))
    marks = gm.filter(F.col("write").isin("generation", "static_replacement")).select(
        "group_id", "partition", "offset", "write", F.lit(None).cast(reasons.schema["r"].dataType).alias("r"))
    down = Window.partitionBy("group_id").orderBy(F.desc("partition"), F.desc("offset"))
    events = (reasons.unionByName(marks)
              .withColumn("next_gen", F.last(F.when(F.col("write") == "generation", F.col("offset")),
                                             ignorenulls=True).over(down.rowsBetween(Window.unboundedPreceding, -1)))
              .withColumn("prev_write", F.lead("write").over(down))
              .withColumn("prev_offset", F.lead("offset").over(down)))
    absorbed = (F.col("prev_write") == "static_replacement") & (F.col("prev_offset") == F.col("offset") - 1)
    attributed = (events.filter(F.col("write").isNull())
                        .withColumn("gm_offset", F.when(absorbed, F.col("prev_offset")).otherwise(F.col("next_gen")))
                        .filter(F.col("gm_offset").isNotNull()))
    return attributed.groupBy("group_id", "gm_offset").agg(F.array_sort(F.collect_list("r")).alias("reasons"))


def _window_causes(records, gm):
    """Each generation's removal causes (type 30000 value version 1): the cause records since the
    previous generation, as member id -> cause (the last one per member)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    causes = records.filter((F.col("kind") == "group_reason") & ~F.col("tombstone")
                            & F.col("reason_cause").isNotNull()).select(
        "group_id", "partition", "offset", F.lit(None).cast("string").alias("write"),
        F.col("reason_member_id").alias("member_id"), F.col("reason_cause").alias("cause"))
    marks = gm.filter(F.col("write") == "generation").select(
        "group_id", "partition", "offset", "write", F.lit(None).cast("string").alias("member_id"),
        F.lit(None).cast("string").alias("cause"))
    down = Window.partitionBy("group_id").orderBy(F.desc("partition"), F.desc("offset"))
    events = (causes.unionByName(marks)
              .withColumn("gm_offset", F.last(F.when(F.col("write") == "generation", F.col("offset")),
                                              ignorenulls=True).over(down.rowsBetween(Window.unboundedPreceding, -1))))
    latest = Window.partitionBy("group_id", "gm_offset", "member_id").orderBy(F.desc("partition"), F.desc("offset"))
    return (events.filter(F.col("write").isNull() & F.col("gm_offset").isNotNull())
            .withColumn("n", F.row_number().over(latest)).filter(F.col("n") == 1)
            .groupBy("group_id", "gm_offset").agg(F.map_from_entries(F.collect_list(F.struct("member_id", "cause")))
                                                  .alias("causes")))


def _has(array, value):
    """`array_contains` with null taken as false (not found), as the one-pass reader's sets answer."""
    from pyspark.sql import functions as F

    return F.coalesce(F.array_contains(array, value), F.lit(False))


def _window_timeline(gm, reasons, causes=None):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    gens = gm.filter(F.col("write").isin("generation", "deleted"))
    w = Window.partitionBy("group_id").orderBy("partition", "offset")
    gens = gens.withColumn("end_ms", F.lead("timestamp").over(w)).filter(F.col("write") == "generation")
    t = gens.join(reasons.withColumnRenamed("gm_offset", "offset"), ["group_id", "offset"], "left")
    t = t.withColumn("reasons", F.coalesce("reasons", F.array()))
    if causes is not None:
        t = t.join(causes.withColumnRenamed("gm_offset", "offset"), ["group_id", "offset"], "left")
    else:
        t = t.withColumn("causes", F.lit(None).cast("map<string,string>"))
    leaves = F.filter("reasons", lambda x: x["api"] == "LeaveGroup")
    t = t.select("*", leaves["member_id"].alias("leave_ids"), leaves["group_instance_id"].alias("leave_instances"),
                 F.col("joined.group_instance_id").alias("joined_instances"))
    leave_ids, leave_instances = F.col("leave_ids"), F.col("leave_instances")
    joined_instances = F.col("joined_instances")
    def cause(m):
        return F.element_at(F.coalesce("causes", F.create_map().cast("map<string,string>")), m["member_id"])

    def rejoined(m):
        return m["group_instance_id"].isNotNull() & _has(joined_instances, m["group_instance_id"])

    def by_text(m):
        return _has(leave_ids, m["member_id"]) | _has(leave_instances, F.coalesce(m["group_instance_id"], F.lit("")))

    def leaving(m):
        return F.coalesce(cause(m).isin("left", "static_left", "static_leave_expired"),
                          cause(m).isNull() & by_text(m))

    def removed(m):
        return F.coalesce(cause(m) == "removed", F.lit(False))

    t = (t.withColumn("left_with_reason", F.filter("left", leaving))
          .withColumn("removed", F.filter("left", lambda m: ~rejoined(m) & ~leaving(m) & removed(m)))
          .withColumn("static_rejoined", F.filter("left", rejoined))
          .withColumn("expired", F.filter("left", lambda m: ~rejoined(m) & ~leaving(m) & ~removed(m))))
    trigger = (F.when(F.col("prev_generation").isNull() | F.col("prev_tombstone") | (F.col("prev_generation") == 0)
                      & (F.col("prev_member_count") == 0), "initial")
                .when(F.col("member_count") == 0, "group_emptied")
                .when(F.size("left_with_reason") > 0, "member_left")
                .when(F.size("removed") > 0, "member_removed")
                .when(F.size("static_rejoined") > 0, "static_member_rejoined")
                .when(F.size("expired") > 0, "member_expired")
                .when(F.size("joined") > 0, "member_joined")
                .otherwise("rejoin"))
    return t.select("group_id", "offset", trigger.alias("trigger"), F.col("reasons.reason").alias("all_reasons"),
                    "end_ms", F.col("joined.member_id").alias("joined"),
                    F.col("left_with_reason.member_id").alias("left"), F.col("removed.member_id").alias("removed"),
                    F.col("expired.member_id").alias("expired"),
                    F.col("static_rejoined.group_instance_id").alias("static_rejoined"), "static_members")


def _window_events(gm, timeline):
    from pyspark.sql import functions as F

    tl = timeline.select("group_id", "offset", F.col("left").alias("left_ids"), F.col("removed").alias("removed_ids"),
                         F.col("static_rejoined").alias("rejoined_instances"))
    g = (gm.filter(F.col("write").isin("generation", "static_replacement"))
           .join(tl, ["group_id", "offset"], "left")
           .withColumn("left_ids", F.coalesce("left_ids", F.array().cast("array<string>")))
           .withColumn("removed_ids", F.coalesce("removed_ids", F.array().cast("array<string>")))
           .withColumn("rejoined_instances", F.coalesce("rejoined_instances", F.array().cast("array<string>"))))
    in_gen = F.col("write") == "generation"
    rejoined = F.array_contains("rejoined_instances", F.coalesce(F.col("m.group_instance_id"), F.lit("")))

    def explode(members, event):
        return (g.select("group_id", "offset", "write", "left_ids", "removed_ids", "rejoined_instances",
                         F.explode(members).alias("m"))
                 .select("group_id", "offset", event.alias("event"), "m.member_id", "m.group_instance_id",
                         "m.client_id", "m.client_host"))

    joined = explode("joined", F.when(in_gen & rejoined, "static_rejoined_as").when(in_gen, "joined")
                     .otherwise("static_replacement_in"))
    gone = explode("left", F.when(~in_gen, "static_replaced").when(rejoined, "static_rejoined")
                   .when(F.array_contains("left_ids", F.col("m.member_id")), "left")
                   .when(F.array_contains("removed_ids", F.col("m.member_id")), "removed").otherwise("expired"))
    return joined.unionByName(gone).filter(F.col("event") != "static_replacement_in")


# ---- the one-pass history against it --------------------------------------------------------------

@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, Path]:
    # Rolled segments: the history must follow a group from one segment into the next.
    return whole_and_cut(tmp_path_factory.mktemp("history"), 40_000, groups=16, partitions=3, seed=11, pieces=3)


def _rows(df) -> list[str]:
    return sorted(map(str, df.collect()))


def test_history_gives_what_the_window_formulation_gave(logs, spark_session):
    from pyspark.sql import functions as F

    from spark_jobs.group_history import current_groups, group_writes, membership_events, rebalance_timeline
    from spark_jobs.reader import read_log

    whole, cut = logs
    rows = read_log(spark_session, whole)
    gm_then = _window_sequence(rows)
    timeline_then = _window_timeline(gm_then, _window_reasons(rows, gm_then), _window_causes(rows, gm_then))
    history = read_log(spark_session, cut, groups="history")
    gm_now = group_writes(history)

    writes = {r["write"]: r["count"] for r in gm_now.groupBy("write").count().collect()}
    assert {"generation", "static_replacement", "deleted"} <= set(writes), writes  # (the generator writes no "created")
    assert _rows(gm_now.select("group_id", "offset", "write", "member_count", "static_members")) == _rows(
        gm_then.select("group_id", "offset", "write", "member_count", "static_members"))

    columns = ("group_id", "offset", "trigger", "all_reasons", "end_ms", "joined", "left", "removed", "expired",
               "static_rejoined", "static_members")
    assert _rows(rebalance_timeline(gm_now).select(*columns)) == _rows(timeline_then.select(*columns))
    assert {r["trigger"] for r in timeline_then.collect()} >= {"initial", "member_left", "member_expired"}

    events = ("group_id", "offset", "event", "member_id", "group_instance_id", "client_id", "client_host")
    assert (_rows(membership_events(gm_now).select(*events))
            == _rows(_window_events(gm_then, timeline_then).select(*events)))

    current_then = (gm_then.filter(F.col("current_members").isNotNull() & ~F.col("tombstone"))
                    .select("group_id", F.col("current_members.member_id").alias("member_ids")))
    assert _rows(current_groups(gm_now, history).select("group_id", "member_ids")) == _rows(current_then)


def test_history_mode_reads_each_log_partition_in_one_task_in_offset_order(logs):
    from spark_jobs.reader import ConsumerOffsetsReader, LogPartition

    _, cut = logs
    parts = ConsumerOffsetsReader(str(cut), None, 1024, summary=True, history=True).partitions()
    assert len(parts) == 3 and all(isinstance(p, LogPartition) for p in parts)
    for part in parts:
        assert len(part.paths) == 3 and len({Path(p).parent for p in part.paths}) == 1
        assert [Path(p).name for p in part.paths] == sorted(Path(p).name for p in part.paths)


def test_reader_schemas_name_the_decoders_columns_in_order():
    from spark_jobs.reader import _HISTORY_TYPES, MEMBER_TYPE, SCHEMA, SUMMARY_SCHEMA

    assert tuple(SCHEMA.names) == COLUMNS
    assert tuple(SUMMARY_SCHEMA.names) == SUMMARY_COLUMNS
    assert tuple(f.name for f in MEMBER_TYPE.fields) == MEMBER_FIELDS
    assert tuple(_HISTORY_TYPES) == HISTORY_COLUMNS


def test_an_unknown_groups_mode_is_refused(spark_session, logs):
    from spark_jobs.reader import read_log

    with pytest.raises(Exception, match="option groups is one of rows, history"):
        _ = read_log(spark_session, logs[0], groups="sequence").schema  # the schema is where it is refused


# ---- the one-pass rules on hand-made records ------------------------------------------------------

def _member(member_id: str, instance: str | None = None) -> dict:
    return {"member_id": member_id, "group_instance_id": instance, "client_id": f"client-{member_id}",
            "client_host": "/10.0.0.1", "rebalance_timeout_ms": 1, "session_timeout_ms": 1, "subscription_bytes": 0,
            "assignment_bytes": 0}


def _metadata(offset: int, generation: int | None, members: list[dict] | None, group: str = "g") -> dict:
    row = {name: None for name in COLUMNS}
    row.update(partition=0, offset=offset, timestamp=1000 * offset, segment="s", record_type=3, kind="group_metadata",
               tombstone=members is None, group_id=group, generation=generation,
               current_state_timestamp=1000 * offset - 1, members=members)
    return row


def _reason(offset: int, api: str, member_id: str, instance: str | None = None, group: str = "g") -> dict:
    row = {name: None for name in COLUMNS}
    row.update(partition=0, offset=offset, timestamp=1000 * offset, segment="s", record_type=30000,
               kind="group_reason", tombstone=False, group_id=group, reason_api=api, reason_member_id=member_id,
               reason_instance_id=instance, reason=f"{api} by {member_id}", reason_timestamp=1000 * offset - 5)
    return row


def _history(rows: list[dict], chunk_rows: int = 2) -> list[dict]:
    batches = [pa.RecordBatch.from_pylist(rows[i:i + 3], schema=arrow_schema()) for i in range(0, len(rows), 3)]
    out = [r for b in read_history(iter(batches), arrow_schema(), chunk_rows) for r in b.to_pylist()]
    assert all("members" not in r for r in out)
    return out


def test_a_static_member_gone_when_a_dynamic_one_joined_expired():
    # The joined members' instance ids hold the dynamic member's None: it must not hide the expiry.
    rows = [_metadata(0, 1, [_member("a", "static-a"), _member("b")]),
            _metadata(1, 2, [_member("b"), _member("c")])]
    gen2 = next(r for r in _history(rows) if r["offset"] == 1)
    assert (gen2["trigger"], gen2["expired"], gen2["static_rejoined"], gen2["joined"]) == ("member_expired", ["a"], [],
                                                                                          ["c"])
    assert [(e["event"], e["member_id"]) for e in gen2["events"]] == [("joined", "c"), ("expired", "a")]


def test_a_static_member_that_left_with_a_reason_when_a_dynamic_one_joined_left():
    rows = [_metadata(0, 1, [_member("a", "static-a"), _member("b")]),
            _reason(1, "LeaveGroup", "a", "static-a"),
            _metadata(2, 2, [_member("b"), _member("c")])]
    gen2 = next(r for r in _history(rows) if r["offset"] == 2)
    assert (gen2["trigger"], gen2["left"], gen2["expired"]) == ("member_left", ["a"], [])
    assert [(e["event"], e["member_id"]) for e in gen2["events"]] == [("joined", "c"), ("left", "a")]


def test_a_reason_written_right_after_a_static_replacement_is_absorbed_by_it():
    rows = [_metadata(0, 1, [_member("a", "static-a"), _member("b")]),
            _metadata(1, 1, [_member("a2", "static-a"), _member("b")]),  # replaced, same generation
            _reason(2, "JoinGroup", "a2", "static-a"),  # its rejoin: absorbed
            _reason(4, "LeaveGroup", "b"),
            _metadata(5, 2, [_member("a2", "static-a")])]
    by_offset = {r["offset"]: r for r in _history(rows)}
    assert by_offset[1]["write"] == "static_replacement"
    assert [(e["event"], e["member_id"]) for e in by_offset[1]["events"]] == [("static_replaced", "a")]
    gen2 = by_offset[5]
    assert [r["member_id"] for r in gen2["reasons"]] == ["b"]
    assert (gen2["trigger"], gen2["left"], gen2["expired"]) == ("member_left", ["b"], [])
    assert by_offset[2]["write"] is None and by_offset[2]["kind"] == "group_reason"  # passed through as it was


def test_a_generation_lasts_until_the_next_generation_or_deletion_and_the_latest_write_has_the_members():
    rows = [_metadata(0, 0, []), _metadata(1, 1, [_member("a", "s")]), _metadata(2, 1, [_member("a2", "s")]),
            _metadata(3, 2, [_member("a2", "s"), _member("b")]), _metadata(4, None, None),
            _metadata(5, 0, [], group="other")]
    by_offset = {r["offset"]: r for r in _history(rows, chunk_rows=1)}
    assert [by_offset[o]["write"] for o in range(6)] == ["created", "generation", "static_replacement", "generation",
                                                         "deleted", "created"]
    assert (by_offset[1]["end_ms"], by_offset[3]["end_ms"]) == (3000, 4000)
    assert by_offset[1]["trigger"] == "initial"  # after an empty generation 0
    assert by_offset[3]["trigger"] == "member_joined" and by_offset[3]["joined"] == ["b"]
    assert [o for o in range(6) if by_offset[o]["current_members"] is not None] == [4, 5]
    assert by_offset[4]["current_members"] == []
