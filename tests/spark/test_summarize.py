"""`spark_jobs.summarize`: commits folded per key and minute give what the rows themselves give.

A generated log, its partition logs cut into two segments (so a key and a minute span segments),
is read both ways: the summary rows are checked against figures computed from row mode, and the
report's offset views must not change when the segments are cut.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from coordinator.log.segment import scan_batches
from spark_jobs.decode import decode_segment, find_segments
from spark_jobs.generate import generate
from spark_jobs.rows import DecodeStats
from spark_jobs.summarize import (
    CURRENT_ASSIGNMENT,
    FOLDED_KINDS,
    KEY_KIND,
    MINUTE_KIND,
    STABLE_STATE,
    summarize_segment,
)

from .segments import whole_and_cut

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, Path]:
    return whole_and_cut(tmp_path_factory.mktemp("summarize"), 20_000, groups=12, partitions=2, seed=7, pieces=2)


def test_summary_rows_give_the_per_key_and_per_minute_figures_of_the_commit_rows(logs):
    _, cut = logs
    segments = find_segments(cut)
    assert len(segments) == 4
    for segment in segments:
        rows = [r for b in decode_segment(segment) for r in b.to_pylist()]
        summary = [r for b in summarize_segment(segment) for r in b.to_pylist()]
        commits = [r for r in rows if r["kind"] == "offset_commit"]
        by_key: dict[tuple, list[dict]] = defaultdict(list)
        per_minute: dict[tuple, list[int]] = defaultdict(list)
        for r in commits:
            by_key[(r["group_id"], r["topic"], r["topic_partition"])].append(r)
            if not r["tombstone"]:
                per_minute[(r["group_id"], r["topic"], r["timestamp"] // 60_000 * 60_000)].append(r["topic_partition"])
        keys = {(r["group_id"], r["topic"], r["topic_partition"]): r for r in summary if r["kind"] == KEY_KIND}
        assert keys.keys() == by_key.keys()
        for key, records in by_key.items():
            got, live = keys[key], [r for r in records if not r["tombstone"]]
            newest = max(records, key=lambda r: r["offset"])
            assert {c: got[c] for c in ("offset", "timestamp", "tombstone", "committed_offset", "leader_epoch",
                                        "metadata", "commit_timestamp", "expire_timestamp")} == \
                   {c: newest[c] for c in ("offset", "timestamp", "tombstone", "committed_offset", "leader_epoch",
                                           "metadata", "commit_timestamp", "expire_timestamp")}
            assert (got["record_count"], got["tombstone_count"], got["commit_count"]) == \
                   (len(records), len(records) - len(live), len(live))
            assert (got["first_ms"], got["last_ms"]) == (min(r["timestamp"] for r in records),
                                                         max(r["timestamp"] for r in records))
            first = min(live, key=lambda r: r["offset"]) if live else None
            last = max(live, key=lambda r: r["offset"]) if live else None
            assert got["first_live_offset"] == (first and first["offset"])
            assert got["first_committed_offset"] == (first and first["committed_offset"])
            assert got["last_live_offset"] == (last and last["offset"])
            assert got["last_committed_offset"] == (last and last["committed_offset"])
            assert got["first_commit_ms"] == (min(r["timestamp"] for r in live) if live else None)
            assert got["last_commit_ms"] == (max(r["timestamp"] for r in live) if live else None)
        minutes = {(r["group_id"], r["topic"], r["timestamp"]): (r["commit_count"], sorted(r["partitions"]))
                   for r in summary if r["kind"] == MINUTE_KIND}
        assert minutes == {k: (len(v), sorted(set(v))) for k, v in per_minute.items()}
        _check_folds(rows, [r for r in summary if r["kind"] in FOLDED_KINDS])
        others = [r for r in summary if r["kind"] not in (KEY_KIND, MINUTE_KIND, *FOLDED_KINDS)]
        expected = [r for r in rows if r["kind"] not in ("offset_commit", *FOLDED_KINDS)]
        assert sorted(others, key=lambda r: r["offset"]) == [{**r, **{c: None for c in others[0] if c not in r}}
                                                             for r in sorted(expected, key=lambda r: r["offset"])]


def _check_folds(rows: list[dict], folds: list[dict]) -> None:
    """The folded KIP-848 rows against the rows themselves: a live STABLE current assignment folds per
    member epoch into its earliest record; every other record of a key folds into its newest record."""
    by_fold: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["kind"] in FOLDED_KINDS:
            value = json.loads(r["value_json"]) if r["value_json"] else {}
            stable = r["kind"] == CURRENT_ASSIGNMENT and not r["tombstone"] and value["State"] == STABLE_STATE
            by_fold[(r["kind"], r["group_id"], r["member_id"], value["MemberEpoch"] if stable else None)].append(r)
    assert len(folds) == len(by_fold)
    assert any(epoch is not None for *_, epoch in by_fold)  # the log has reconciled members
    got = {(r["kind"], r["group_id"], r["member_id"], r["stable_epoch"]): r for r in folds}
    assert got.keys() == by_fold.keys()
    for key, records in by_fold.items():
        chosen = (min(records, key=lambda r: (r["timestamp"], r["offset"])) if key[-1] is not None
                  else max(records, key=lambda r: r["offset"]))
        row = got[key]
        assert row["value_json"] is None  # not decoded
        same = [c for c in chosen if c != "value_json"]
        assert {c: row[c] for c in same} == {c: chosen[c] for c in same}
        assert (row["record_count"], row["tombstone_count"], row["first_ms"], row["last_ms"]) == (
            len(records), sum(r["tombstone"] for r in records), min(r["timestamp"] for r in records),
            max(r["timestamp"] for r in records))


def test_offset_views_do_not_change_when_a_partition_log_is_cut_into_segments(logs, spark_session, tmp_path):
    from spark_jobs.group_history import build_report

    whole, cut = logs
    reports = {}
    for name, log_dir in (("whole", whole), ("cut", cut)):
        summary = build_report(spark_session, log_dir, tmp_path / name, html=False)
        views = {v: sorted(map(str, spark_session.read.parquet(str(tmp_path / name / v)).collect()))
                 for v in ("commits_per_minute", "offset_progress", "current_offsets")}
        summary.pop("seconds")
        summary.pop("phase_seconds")
        summary["log"].pop("path")
        summary["log"].pop("segments")
        reports[name] = (json.dumps(summary, sort_keys=True, default=str), views)
    assert reports["cut"] == reports["whole"]
    assert reports["whole"][1]["offset_progress"]


def test_both_readers_end_a_segment_at_its_first_bad_batch(tmp_path: Path) -> None:
    """The loader's rule, kept by the one batch walk both read modes share: a corrupt byte ends the
    file there, the problem is reported, and every record before it is still read."""
    generate(tmp_path / "log", 5_000, groups=4, partitions=1, seed=3)
    segment = find_segments(tmp_path / "log")[0]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    with open(segment, "rb") as f:
        intact = 0
        for position, header, _ in scan_batches(f.fileno(), len(data), verify=False):
            if position + header.size > len(data) // 2:
                break
            intact += header.records_count
    rows, summary = DecodeStats(), DecodeStats()
    assert sum(b.num_rows for b in decode_segment(segment, stats=rows)) == intact
    list(summarize_segment(segment, stats=summary))
    assert summary.records == intact
    assert len(rows.problems) == 1 and "stopped at byte" in rows.problems[0]
    assert summary.problems == rows.problems
