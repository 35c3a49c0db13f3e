"""`spark.read.format("consumer_offsets").load(PATH)`: a Spark 4 Python data source over segment files.

One input partition per segment file, largest first; each is decoded on an executor by
`spark_jobs.decode` (the server's codec) into Arrow record batches, which Spark takes as they are
(no Python row objects), one row per record. PATH is
anything `decode.find_segments` takes: a data dir, a partition dir, a segment file, or a directory
of segments exported from another server. Option `partition` sets the partition number of an
export whose directory name does not say it (default -1). Option `commits=summary` yields offset
commits summarized per key and per minute instead of one row each (`spark_jobs.summarize`; the
group-history job reads that way), with the extra columns of `SUMMARY_SCHEMA`. Option
`groups=history` gives each GroupMetadata row its place in its group's history instead of its full
member list (`spark_jobs.sequence`: the write's kind, who joined and left, the rebalance it completed);
then one input partition reads all segments of a log partition, in offset order.

    from spark_jobs.reader import register, read_log
    register(spark)
    df = spark.read.format("consumer_offsets").load("/var/lib/groupcoord")
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

# The decoders are imported where they are used (`partitions`, `read`), not here: Spark plans a
# Python data source in Python processes of its own, which import this module, and the record codec
# is compiled at import (1.4 CPU-s each). The column names below are checked against theirs in
# tests/spark/test_history_reader.py.

FORMAT = "consumer_offsets"

MEMBER_TYPE = StructType([
    StructField("member_id", StringType()), StructField("group_instance_id", StringType()),
    StructField("client_id", StringType()), StructField("client_host", StringType()),
    StructField("rebalance_timeout_ms", IntegerType()), StructField("session_timeout_ms", IntegerType()),
    StructField("subscription_bytes", IntegerType()), StructField("assignment_bytes", IntegerType()),
])

_TYPES = {
    "partition": IntegerType(), "offset": LongType(), "timestamp": LongType(), "segment": StringType(),
    "record_type": IntegerType(), "kind": StringType(), "value_version": ShortType(), "tombstone": BooleanType(),
    "group_id": StringType(), "member_id": StringType(),
    "protocol_type": StringType(), "generation": IntegerType(), "protocol": StringType(), "leader": StringType(),
    "current_state_timestamp": LongType(), "members": ArrayType(MEMBER_TYPE),
    "topic": StringType(), "topic_partition": IntegerType(), "committed_offset": LongType(),
    "leader_epoch": IntegerType(), "metadata": StringType(), "commit_timestamp": LongType(),
    "expire_timestamp": LongType(),
    "reason_api": StringType(), "reason_member_id": StringType(), "reason_instance_id": StringType(),
    "reason": StringType(), "reason_timestamp": LongType(), "reason_cause": StringType(),
    "value_json": StringType(),
}
SCHEMA = StructType([StructField(name, typ) for name, typ in _TYPES.items()])  # rows.COLUMNS, in order
_SUMMARY_TYPES = {
    "record_count": LongType(), "tombstone_count": LongType(), "commit_count": LongType(), "first_ms": LongType(),
    "last_ms": LongType(), "first_commit_ms": LongType(), "last_commit_ms": LongType(),
    "first_live_offset": LongType(), "first_committed_offset": LongType(), "last_live_offset": LongType(),
    "last_committed_offset": LongType(), "partitions": ArrayType(IntegerType()), "stable_epoch": IntegerType(),
}
SUMMARY_SCHEMA = StructType([*SCHEMA.fields, *(StructField(name, typ) for name, typ in _SUMMARY_TYPES.items())])
COMMITS_MODES = ("rows", "summary")
GROUPS_MODES = ("rows", "history")

#: Spark types of `sequence.HISTORY_FIELDS` (the member structs keep only the fields the report shows).
_REPORT_MEMBER = StructType([StructField(name, StringType()) for name in
                             ("member_id", "group_instance_id", "client_id", "client_host")])
_HISTORY_TYPES = {
    "write": StringType(), "member_count": IntegerType(), "static_members": IntegerType(), "trigger": StringType(),
    "reasons": ArrayType(StructType([
        StructField("reason_ms", LongType()), StructField("api", StringType()), StructField("member_id", StringType()),
        StructField("group_instance_id", StringType()), StructField("reason", StringType())])),
    "end_ms": LongType(), "joined": ArrayType(StringType()), "left": ArrayType(StringType()),
    "expired": ArrayType(StringType()), "static_rejoined": ArrayType(StringType()),
    "events": ArrayType(StructType([StructField("event", StringType()), *_REPORT_MEMBER.fields])),
    "current_members": ArrayType(_REPORT_MEMBER), "removed": ArrayType(StringType()),
}


def history_schema(base: StructType) -> StructType:
    """``base`` without `members`, with the history columns (as `sequence.history_schema`)."""
    return StructType([f for f in base.fields if f.name != "members"]
                      + [StructField(name, typ) for name, typ in _HISTORY_TYPES.items()])


class SegmentPartition(InputPartition):
    def __init__(self, path: str, partition: int | None) -> None:
        super().__init__(path)
        self.path = path
        self.partition = partition


class LogPartition(InputPartition):
    """The segments of one log partition, read one after the other (offset order) by one task."""

    def __init__(self, paths: list[str], partition: int | None) -> None:
        super().__init__(paths)
        self.paths = paths
        self.partition = partition


class ConsumerOffsetsReader(DataSourceReader):
    def __init__(self, path: str, partition: int | None, chunk_rows: int, summary: bool = False,
                 history: bool = False) -> None:
        self.path = path
        self.partition = partition
        self.chunk_rows = chunk_rows
        self.summary = summary
        self.history = history

    def partitions(self) -> list[InputPartition]:
        from spark_jobs.decode import find_segments

        # Largest first: Spark starts tasks in this order, so the big ones do not end up last on one
        # core while the other idles (a log has a few full 100 MB segments and small tails).
        segments = find_segments(self.path)
        if self.history:
            by_dir: dict[Path, list[Path]] = {}
            for segment in segments:  # already in offset order within a directory
                by_dir.setdefault(segment.parent, []).append(segment)
            logs = sorted(by_dir.values(), key=lambda paths: (-sum(p.stat().st_size for p in paths), str(paths[0])))
            return [LogPartition([str(p) for p in paths], self.partition) for paths in logs]
        segments = sorted(segments, key=lambda p: (-p.stat().st_size, str(p)))
        return [SegmentPartition(str(p), self.partition) for p in segments]

    def read(self, partition: InputPartition) -> Iterator:  # type: ignore[override]
        from spark_jobs.decode import decode_segment
        from spark_jobs.rows import arrow_schema
        from spark_jobs.sequence import read_history
        from spark_jobs.summarize import summarize_segment, summary_schema

        # Arrow batches go to the JVM as they are; no per-row Python objects cross over.
        decode = summarize_segment if self.summary else decode_segment
        with gc_paused():
            if isinstance(partition, LogPartition):
                batches = (batch for path in partition.paths
                           for batch in decode(Path(path), partition.partition, self.chunk_rows))
                schema = summary_schema() if self.summary else arrow_schema()
                yield from read_history(batches, schema, self.chunk_rows)
            else:
                assert isinstance(partition, SegmentPartition)
                yield from decode(Path(partition.path), partition.partition, self.chunk_rows)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Decoding makes millions of short-lived containers (per batch: its columns) and holds a segment's
    values; the cyclic collector kept rescanning them for 10-15% of the decode time. Nothing the
    decoders build is cyclic, so reference counting frees it all the same."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ConsumerOffsetsDataSource(DataSource):
    """Options: `path` (what `load()` was given), `partition` (for exports), `chunkRows` (rows per Arrow
    batch), `commits` (`rows`, the default, or `summary`), `groups` (`rows`, the default, or `history`)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        base = SUMMARY_SCHEMA if self._summary() else SCHEMA
        return history_schema(base) if self._history() else base

    def _summary(self) -> bool:
        return self._mode("commits", COMMITS_MODES) == "summary"

    def _history(self) -> bool:
        return self._mode("groups", GROUPS_MODES) == "history"

    def _mode(self, option: str, modes: tuple[str, ...]) -> str:
        mode = self.options.get(option, modes[0])
        if mode not in modes:
            raise ValueError(f"consumer_offsets: option {option} is one of {', '.join(modes)}, not {mode!r}")
        return mode

    def reader(self, schema: StructType) -> DataSourceReader:
        path = self.options.get("path")
        if not path:
            raise ValueError("consumer_offsets: load(PATH) needs a data dir, partition dir or segment file")
        partition = self.options.get("partition")
        return ConsumerOffsetsReader(path, int(partition) if partition is not None else None,
                                     int(self.options.get("chunkRows", 131072)), self._summary(), self._history())


def register(spark: SparkSession) -> None:
    spark.dataSource.register(ConsumerOffsetsDataSource)


def read_log(spark: SparkSession, path: str | Path, partition: int | None = None, commits: str = "rows",
             groups: str = "rows") -> DataFrame:
    register(spark)
    reader = spark.read.format(FORMAT).option("commits", commits).option("groups", groups)
    if partition is not None:
        reader = reader.option("partition", str(partition))
    return reader.load(str(Path(path).resolve()))


def local_session(master: str = "local[*]", app_name: str = "groupcoord-report", **conf: str) -> SparkSession:
    """A SparkSession whose Python workers run this interpreter (so they see the project and pyarrow).

    Under spark-submit the master and the Python come from spark-submit's own settings, which win
    over ``master`` here (getOrCreate returns the session spark-submit configured).
    """
    builder = SparkSession.builder.appName(app_name)
    if not _under_spark_submit():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master)
    # Shuffles here are of aggregates (a few rows per group), so two partitions per core are plenty;
    # Spark's 200 would mean 200 tiny tasks per stage. Not one per core, though that is as fast: the
    # summary's percentile_approx depends on how the timeline is split into files (one partition per
    # core: p95 2879 instead of 2880 on the 10M benchmark log). The driver is the executor in local
    # mode: its memory holds the cached rows.
    # The JVM options: the job is a few dozen short Spark jobs over small tables, and on a 2-core
    # machine C2 compiling them and G1's concurrent threads took more CPU than the work itself
    # (1M records: 135 -> 80 CPU-s for the whole job, 198 -> 74 s wall). C1 code is fast enough here.
    # No whole-stage codegen either: the tables are small (the reader has folded the commits), and
    # stages waited on Janino compiling a class each (10M records, the rebalance views over cached rows:
    # 30 -> 22 s wall for the same JVM CPU-s). Each expression is still compiled.
    defaults = {"spark.ui.enabled": "false", "spark.sql.session.timeZone": "UTC",
                "spark.sql.codegen.wholeStage": "false",
                # Cached rows are read by a dozen views, then dropped: compressing them cost more than it saved.
                "spark.sql.inMemoryColumnarStorage.compressed": "false",
                "spark.sql.shuffle.partitions": str(2 * _cores(master)), "spark.driver.memory": "3g",
                "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC",
                "spark.sql.execution.arrow.pyspark.enabled": "true"}
    for key, value in {**defaults, **conf}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _cores(master: str) -> int:
    """Cores of a local master (`local`, `local[N]`, `local[*]`, `local[N,retries]`); others: this machine's."""
    if master == "local":
        return 1
    if master.startswith("local[") and master.endswith("]"):
        n = master[len("local["):-1].split(",")[0]
        if n.isdigit():
            return max(1, int(n))
    return os.cpu_count() or 1


def _under_spark_submit() -> bool:
    # spark-submit starts the driver with these set; a plain `python` run has neither.
    return "PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_SUBMIT" in os.environ
