"""Offset commits written in transactions (TxnOffsetCommit): both Spark readers read the committed
ones like any commit and leave out the aborted ones and those of a transaction still open, as the
server's loader does, across the segments of a partition; the decode stats count each kind."""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordinator.log.manager import LogManager
from coordinator.records import offset_commit_record
from coordinator.server.log_record_store import LogRecordStore
from coordinator.topics import OFFSETS_TOPIC
from spark_jobs.decode import decode_segment, find_segments
from spark_jobs.rows import DecodeStats
from spark_jobs.summarize import summarize_segment
from tests.spark.segments import split_segments


def _commit(partition: int, offset: int, pid: int = -1):
    return offset_commit_record("g", "t", partition, offset, -1, "", 1_700_000_000_000, producer_id=pid,
                                producer_epoch=0)


def _write(root: Path) -> None:
    async def write() -> None:
        logs = LogManager(root)
        store = LogRecordStore(logs, 50)
        await asyncio.gather(
            store.append(3, [_commit(0, 1)]),
            store.append(3, [_commit(0, 10, pid=500), _commit(1, 11, pid=500)]),
            store.append(3, [_commit(2, 20, pid=501)]),
            store.append(3, [_commit(3, 1)]),
            store.append_marker(3, 501, 0, False, 0),
            store.append(3, [_commit(3, 2)]),
            store.append_marker(3, 500, 0, True, 0),
            store.append(3, [_commit(1, 30, pid=502)]))  # open at the end of the log
        logs.close()

    asyncio.run(write())


def _offsets(segments: list[Path], stats: DecodeStats) -> list[tuple[int, int]]:
    return sorted((r["topic_partition"], r["committed_offset"])
                  for s in segments for b in decode_segment(s, stats=stats)
                  for r in b.to_pylist() if r["kind"] == "offset_commit")


def test_aborted_and_open_transactional_commits_are_left_out_and_counted(tmp_path: Path) -> None:
    _write(tmp_path)
    whole = find_segments(tmp_path / f"{OFFSETS_TOPIC}-3")
    stats = DecodeStats()
    assert _offsets(whole, stats) == [(0, 1), (0, 10), (1, 11), (3, 1), (3, 2)]
    assert (stats.committed_txn_records, stats.aborted_txn_records, stats.open_txn_records) == (2, 1, 1)
    summary = DecodeStats()
    for segment in whole:
        list(summarize_segment(segment, stats=summary))
    assert (summary.committed_txn_records, summary.aborted_txn_records, summary.open_txn_records) == (2, 1, 1)

    split_segments(tmp_path, 4)  # the markers now sit in later files than the records they decide
    cut = find_segments(tmp_path / f"{OFFSETS_TOPIC}-3")
    assert len(cut) == 4
    assert _offsets(cut, DecodeStats()) == [(0, 1), (0, 10), (1, 11), (3, 1), (3, 2)]


def test_the_report_section_counts_committed_aborted_and_open_transactional_commits(tmp_path: Path) -> None:
    from spark_jobs.transactions_report import section, transaction_summary

    _write(tmp_path)
    summary = transaction_summary(find_segments(tmp_path))
    assert summary == {"committed_records": 2, "aborted_records": 1, "open_records": 1}
    section_id, title, html = section(summary)
    assert (section_id, title) == ("transactional-commits", "Transactional offset commits")
    assert "<td>committed (counted as offset commits)</td><td>2</td>" in html
    assert "<td>aborted (left out)</td><td>1</td>" in html
