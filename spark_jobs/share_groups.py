"""The report's share-group section (KIP-932): deliveries, redeliveries, accepted and archived records
per share group and share-partition, the share-partition start offset over time, state epochs, and
the groups' members joined and left.

Sources:
- `__share_group_state` (coordinator/records/share_state.py): one ShareSnapshot per change of a
  share-partition (its start offset and the (state, delivery count) of every offset in its window),
  ShareUpdate records applied over the snapshot before them, tombstones when a share-partition is
  deleted. Read on the driver: the log is compacted and holds a few records per share-partition
  change, next to the millions of `__consumer_offsets`.
- `__consumer_offsets` share group records (types 10-15), from the report's cached rows: a member
  joined when its ShareGroupMemberMetadata key appears (first, or after a tombstone) and left at its
  tombstone; each ShareGroupMetadata record is one group epoch bump.
- `group_configs.json` of the data dir: the group's `share.delivery.count.limit` if set (its current
  value; the broker's default is not in the data dir).

What the snapshots tell, compared state by state per share-partition in log order:
- Exact: the start offset and state epoch over time; an offset seen ACKNOWLEDGED (accepted) or
  ARCHIVED in a window, with its delivery count; the delivery count of each offset still in flight.
  The server writes every return of a record to AVAILABLE (RELEASE, lock expiry, session close), so
  each redelivery's count is seen.
- Not written, so not told: an acquisition (a record is persisted AVAILABLE with the count from
  before it, as Kafka's SharePartition does); deliveries a crash undid are not counted (a record
  acquired and not acknowledged before a SIGKILL is delivered again with the same count).
- Each write carries the start offset as it was before the change written, with the final states
  of the records from there (Kafka's SharePartition.writeShareGroupState), so an offset settled at
  the head is seen ACKNOWLEDGED or ARCHIVED before the start passes it. An offset the start passes
  unseen (the log start moved by DeleteRecords or retention, or a log an older server wrote) is
  counted `settled_unseen` (accepted or archived, the log cannot say which) with one delivery more
  than its last seen count.
- Archived with delivery count 1 is a REJECT (or GAP, or an aborted transaction's record under
  read_committed): the limit is at least 2. With a higher count it is the delivery limit or a
  REJECT of a redelivery; when the group's limit is known, a count below it is `rejected` and a
  count at it `archived_at_limit` (the limit reached, or a REJECT of the last allowed delivery).
- A new state epoch (AlterShareGroupOffsets) discards the window: its unsettled offsets are
  counted `discarded`. A tombstone (DeleteShareGroupOffsets) does the same.
- Compaction keeps a share-partition's latest snapshot only: figures cover the history the log
  still holds.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from coordinator.group_config_store import FILE_NAME as GROUP_CONFIGS_FILE
from coordinator.log.batch import CorruptBatchError, iter_records
from coordinator.log.partition import parse_partition_dir
from coordinator.log.segment import SUFFIX, base_offset_of, scan_batches
from coordinator.records.share_state import (
    SHARE_STATE_TOPIC,
    PersistedBatch,
    ShareStateRecordType,
    batches_of,
    decode_share_state,
)

log = structlog.get_logger(__name__)

SECTION_ID = "share-groups"
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4  # Kafka's RecordState ids as persisted
DELIVERY_LIMIT_CONFIG = "share.delivery.count.limit"
SHARE_KINDS = ("share_group_member_metadata", "share_group_metadata", "share_group_state_partition_metadata")
#: What the summary keeps (the Parquet tables keep everything): share-partitions, start-offset points each.
SUMMARY_PARTITIONS, SUMMARY_START_POINTS = 1000, 500
CHARTED_PARTITIONS = 5  # start-offset charts: the share-partitions with the most deliveries
COUNTS = ("deliveries", "first_deliveries", "redeliveries", "accepted", "archived", "archived_first_delivery",
          "archived_redelivered", "rejected", "archived_at_limit", "settled_unseen", "in_flight", "discarded")


@dataclass(frozen=True, slots=True)
class StateRecord:
    """One `__share_group_state` record, in the order of its log partition."""

    log_partition: int
    offset: int
    timestamp: int
    group_id: str
    topic_id: str
    partition: int
    tombstone: bool
    update: bool = False  # a ShareUpdate (batches over the last snapshot; start -1: unchanged)
    state_epoch: int = 0
    start_offset: int = -1
    batches: tuple[PersistedBatch, ...] = ()


def read_state_log(log_dir: Path) -> list[StateRecord]:
    """Every record of `__share_group_state-N/` under ``log_dir``, per partition in offset order; a file
    is read up to its first bad batch, as the server's loader reads it."""
    out: list[StateRecord] = []
    if not log_dir.is_dir():
        return out
    for directory in sorted(log_dir.glob(f"{SHARE_STATE_TOPIC}-*")):
        try:
            _, index = parse_partition_dir(directory.name)
        except ValueError:
            continue
        segments = sorted((p for p in directory.iterdir()
                           if p.name.endswith(SUFFIX) and p.name[:-len(SUFFIX)].isdigit()), key=base_offset_of)
        for segment in segments:
            out += _read_segment(segment, index)
    return out


def _read_segment(segment: Path, index: int) -> Iterator[StateRecord]:
    with open(segment, "rb") as f:
        size = segment.stat().st_size
        try:
            for _pos, header, view in scan_batches(f.fileno(), size):
                if header.is_control:
                    continue
                for record in iter_records(bytes(view), 0, header):
                    if record.key is None:
                        continue
                    try:
                        decoded = decode_share_state(record.key, record.value)
                    except ValueError:
                        continue  # another writer's record type
                    value = decoded.value
                    yield StateRecord(
                        index, record.offset, record.timestamp, decoded.group_id, str(decoded.topic_id),
                        decoded.partition, value is None, decoded.record_type is ShareStateRecordType.SHARE_UPDATE,
                        value.state_epoch if value is not None else 0,
                        value.start_offset if value is not None else -1,
                        tuple(batches_of(value)) if value is not None else ())
        except CorruptBatchError as exc:
            log.warning("share_state_segment_cut", segment=str(segment), position=exc.position, reason=str(exc))


@dataclass(slots=True)
class PartitionFold:
    """The figures of one share-partition, folded over its states in log order (module docstring)."""

    group_id: str
    topic_id: str
    partition: int
    limit: int | None
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    starts: list[tuple[int, int, int]] = field(default_factory=list)  # (write ms, start offset, state epoch)
    state_epochs: set[int] = field(default_factory=set)
    window: dict[int, tuple[int, int]] | None = None  # offset -> (state, count) of the last state
    start: int = 0
    state_epoch: int = 0
    settled: set[int] = field(default_factory=set)  # offsets of the window already counted final

    def add(self, record: StateRecord) -> None:
        if record.tombstone:
            self._discard()
            return
        if record.update:
            if self.window is None:
                return  # an update without its snapshot: nothing to apply it to
            start = record.start_offset if record.start_offset >= 0 else self.start
            window = {o: s for o, s in self.window.items() if o >= start}
            window.update(_expand(record.batches, start))
            self._next(record.timestamp, start, self.state_epoch, window)
            return
        self._next(record.timestamp, record.start_offset, record.state_epoch, _expand(record.batches,
                                                                                      record.start_offset))

    def _next(self, write_ms: int, start: int, state_epoch: int, window: dict[int, tuple[int, int]]) -> None:
        if self.window is not None and state_epoch != self.state_epoch:
            self._discard()
        if self.window is not None:
            for offset in range(self.start, start):  # passed by the start offset
                if offset in self.settled:
                    continue
                _state, count = self.window.get(offset, (AVAILABLE, 0))
                self.counts["settled_unseen"] += 1
                self._delivered(count + 1)
            self.settled = {o for o in self.settled if o >= start}
        for offset, (state, count) in window.items():
            if state in (ACKNOWLEDGED, ARCHIVED) and offset not in self.settled:
                self.settled.add(offset)
                self._delivered(count)
                if state == ACKNOWLEDGED:
                    self.counts["accepted"] += 1
                else:
                    self._archived(count)
        if not self.starts or self.starts[-1][1:] != (start, state_epoch):
            self.starts.append((write_ms, start, state_epoch))
        self.state_epochs.add(state_epoch)
        self.window, self.start, self.state_epoch = window, start, state_epoch

    def _delivered(self, count: int) -> None:
        self.counts["deliveries"] += count
        self.counts["first_deliveries"] += 1 if count >= 1 else 0
        self.counts["redeliveries"] += max(0, count - 1)

    def _archived(self, count: int) -> None:
        self.counts["archived"] += 1
        self.counts["archived_first_delivery" if count <= 1 else "archived_redelivered"] += 1
        if self.limit is not None:
            self.counts["archived_at_limit" if count >= self.limit else "rejected"] += 1
        elif count <= 1:
            self.counts["rejected"] += 1

    def _discard(self) -> None:
        for offset, (_state, count) in (self.window or {}).items():
            if offset not in self.settled:
                self.counts["discarded"] += 1
                self._delivered(count)
        self.window, self.settled = None, set()

    def finish(self) -> dict[str, Any]:
        """The row of this share-partition at the end of the log; offsets still in flight count the
        deliveries they had."""
        for offset, (_state, count) in (self.window or {}).items():
            if offset not in self.settled:
                self.counts["in_flight"] += 1
                self._delivered(count)
        self.window, self.settled = None, set()
        return {"group_id": self.group_id, "topic_id": self.topic_id, "partition": self.partition,
                "delivery_count_limit": self.limit, **self.counts,
                "start_offset": self.starts[-1][1] if self.starts else None,
                "state_epochs": sorted(self.state_epochs), "start_offsets": [list(s) for s in self.starts]}


def _expand(batches: Iterable[PersistedBatch], start: int) -> dict[int, tuple[int, int]]:
    return {offset: (b.state, b.delivery_count) for b in batches
            for offset in range(max(b.first_offset, start), b.last_offset + 1)}


def delivery_limits(log_dir: Path) -> dict[str, int]:
    """share.delivery.count.limit of every group that sets it (group_configs.json), else nothing."""
    path = log_dir / GROUP_CONFIGS_FILE
    if not path.is_file():
        return {}
    groups = json.loads(path.read_text()).get("groups", {})
    return {group: int(configs[DELIVERY_LIMIT_CONFIG]) for group, configs in groups.items()
            if DELIVERY_LIMIT_CONFIG in configs}


def fold_share_partitions(records: Iterable[StateRecord], limits: dict[str, int]) -> list[dict[str, Any]]:
    """One row per share-partition (group, topic id, partition), ordered by that key."""
    folds: dict[tuple[str, str, int], PartitionFold] = {}
    for record in records:
        key = (record.group_id, record.topic_id, record.partition)
        fold = folds.get(key)
        if fold is None:
            fold = folds[key] = PartitionFold(*key, limits.get(record.group_id))
        fold.add(record)
    return [folds[key].finish() for key in sorted(folds)]


def membership(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per share group: members joined and left, and group epoch bumps, from the `__consumer_offsets`
    rows of SHARE_KINDS (kind, group_id, member_id, tombstone), in log order."""
    groups: dict[str, dict[str, int]] = {}
    live: set[tuple[str, str]] = set()
    for row in rows:
        if row["kind"] == "share_group_state_partition_metadata":
            continue
        group = groups.setdefault(row["group_id"], {"joined": 0, "left": 0, "epoch_bumps": 0})
        if row["kind"] == "share_group_metadata":
            group["epoch_bumps"] += 0 if row["tombstone"] else 1
            continue
        member = (row["group_id"], row["member_id"])
        if row["tombstone"]:
            if member in live:
                live.discard(member)
                group["left"] += 1
        elif member not in live:
            live.add(member)
            group["joined"] += 1
    return groups


def topic_names(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Topic id -> name, from the ShareGroupStatePartitionMetadata records (the share-partitions a group
    initialized, with their topics' names)."""
    names: dict[str, str] = {}
    for row in rows:
        if row["kind"] == "share_group_state_partition_metadata" and not row["tombstone"] and row["value_json"]:
            value = json.loads(row["value_json"])
            for topic in (*value.get("InitializedTopics", ()), *value.get("InitializingTopics", ())):
                names[topic["TopicId"]] = topic["TopicName"]
    return names


def share_summary(log_dir: Path, member_rows: Iterable[dict[str, Any]], out: Path | None = None) -> dict[str, Any]:
    """The summary's `share_groups` section: totals, per group, and per share-partition; with ``out``,
    its tables are written there too (`write_tables`)."""
    member_rows = list(member_rows)
    partitions = fold_share_partitions(read_state_log(log_dir), delivery_limits(log_dir))
    names = topic_names(member_rows)
    for row in partitions:
        row["topic"] = names.get(row["topic_id"])  # None: the group records are gone (deleted group)
    members = membership(member_rows)
    per_group: dict[str, dict[str, Any]] = {}
    for row in partitions:
        group = per_group.setdefault(row["group_id"], {**dict.fromkeys(COUNTS, 0), "share_partitions": 0})
        group["share_partitions"] += 1
        for name in COUNTS:
            group[name] += row[name]
    for group_id, figures in members.items():
        per_group.setdefault(group_id, {**dict.fromkeys(COUNTS, 0), "share_partitions": 0}).update(figures)
    for figures in per_group.values():
        for name in ("joined", "left", "epoch_bumps"):
            figures.setdefault(name, 0)
    totals = {name: sum(g[name] for g in per_group.values())
              for name in (*COUNTS, "share_partitions", "joined", "left", "epoch_bumps")}
    summary = {"groups": len(per_group), **totals, "per_group": dict(sorted(per_group.items())),
               "partitions": partitions}
    if out is not None:
        write_tables(summary, out)
    # The summary (embedded in the page too) keeps a bounded share of it; the tables have it all.
    summary["partitions"] = [{**r, "start_offsets": _thinned(r["start_offsets"], SUMMARY_START_POINTS)}
                             for r in partitions[:SUMMARY_PARTITIONS]]
    return summary


def _thinned(points: list[Any], most: int) -> list[Any]:
    """At most ``most`` of ``points``, evenly spread, the last one kept."""
    if len(points) <= most:
        return points
    step = len(points) / most
    return [points[int(i * step)] for i in range(most - 1)] + [points[-1]]


def member_rows(records: Any) -> list[dict[str, Any]]:
    """The share group membership rows of the report's cached `__consumer_offsets` rows (a Spark
    DataFrame), in log order: a few per member join or leave."""
    from pyspark.sql import functions as F

    return (records.filter(F.col("kind").isin(*SHARE_KINDS))
            .select("kind", "group_id", "member_id", "tombstone", "partition", "offset", "value_json")
            .orderBy("partition", "offset").toArrow().to_pylist())


_PARTITION_COLUMNS = ("group_id", "topic", "topic_id", "partition", "deliveries", "first_deliveries", "redeliveries",
                      "accepted", "archived", "rejected", "archived_at_limit", "settled_unseen", "in_flight",
                      "discarded", "start_offset", "state_epochs")
_GROUP_COLUMNS = ("share_partitions", "joined", "left", "epoch_bumps", "deliveries", "first_deliveries",
                  "redeliveries", "accepted", "archived", "archived_first_delivery", "archived_redelivered",
                  "rejected", "archived_at_limit", "settled_unseen", "in_flight", "discarded")


def section(summary: dict[str, Any]) -> tuple[str, str, str]:
    """(id, title, HTML) of the report section."""
    from spark_jobs.html_report import line_chart  # it imports this module for the section

    title = "Share groups"
    if not summary["groups"]:
        return SECTION_ID, title, '<p class="empty">No share groups in this log.</p>'
    e = html.escape
    note = ("<p>From the share-partition states in <code>__share_group_state</code>: deliveries count each "
            "record's durable delivery count; <em>settled unseen</em> records left the window at its head "
            "(accepted or archived, the log does not say which); archived at delivery count 1 is a rejection, "
            "<em>at limit</em> needs the group's share.delivery.count.limit (group config).</p>")
    group_head = "".join(f"<th>{e(c)}</th>" for c in ("group_id", *_GROUP_COLUMNS))
    group_rows = "".join("<tr>" + f"<td>{e(g)}</td>" + "".join(f"<td>{figures[c]}</td>" for c in _GROUP_COLUMNS)
                         + "</tr>" for g, figures in list(summary["per_group"].items())[:200])
    part_head = "".join(f"<th>{e(c)}</th>" for c in (*_PARTITION_COLUMNS, "start offset over time"))
    part_rows = "".join(
        "<tr>" + "".join(f"<td>{e(str(r[c]))}</td>" for c in _PARTITION_COLUMNS)
        + f"<td>{e(' → '.join(str(start) for _ms, start, _epoch in r['start_offsets'][-20:]))}</td></tr>"
        for r in summary["partitions"][:500])
    busiest = sorted(summary["partitions"], key=lambda r: (-r["deliveries"], r["group_id"], r["topic_id"],
                                                          r["partition"]))[:CHARTED_PARTITIONS]
    charts = "".join(
        f"<h3>Start offset of {e(r['group_id'])} / {e(r['topic'] or r['topic_id'])}-{r['partition']}</h3>"
        + line_chart([ms for ms, _start, _epoch in r["start_offsets"]],
                     [start for _ms, start, _epoch in r["start_offsets"]], "share-partition start offset",
                     chart_id=f"chart-share-start-{i}")
        for i, r in enumerate(busiest))
    return (SECTION_ID, title, note + f'<table id="share-groups-table"><tr>{group_head}</tr>{group_rows}</table>'
            f'<h3>Share-partitions</h3><table id="share-partitions-table"><tr>{part_head}</tr>{part_rows}</table>'
            + charts)


def write_tables(summary: dict[str, Any], out: Path) -> None:
    """`share_partitions` (one row per share-partition) and `share_start_offsets` (one row per change of
    a start offset or state epoch) as Parquet beside the Spark views, one file each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{k: v for k, v in r.items() if k != "start_offsets"} for r in summary["partitions"]]
    starts = [{"group_id": r["group_id"], "topic_id": r["topic_id"], "partition": r["partition"],
               "write_ms": ms, "start_offset": start, "state_epoch": epoch}
              for r in summary["partitions"] for ms, start, epoch in r["start_offsets"]]
    for name, table in (("share_partitions", rows), ("share_start_offsets", starts)):
        if table:
            (out / name).mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(table), out / name / "part-0.parquet")
