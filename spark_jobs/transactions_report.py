"""The report's section on transactional offset commits (TxnOffsetCommit): how many the log holds
of committed transactions (read like any commit), of aborted ones and of transactions still open at
the end of the log (both left out of every other figure, as the server's loader leaves them out).

Computed on the driver from the segments' batch headers and markers (spark_jobs.decode.
segment_transactions): a transaction's fate is a fact of its partition, not of one record.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path

from spark_jobs.decode import segment_transactions

SECTION_ID = "transactional-commits"


def transaction_summary(segments: Iterable[Path]) -> dict[str, int]:
    """Offset commit records written in transactions, by what became of their transaction."""
    committed = aborted = still_open = 0
    for segment in segments:
        txns = segment_transactions(segment)
        committed += txns.committed_records
        aborted += txns.aborted_records
        still_open += txns.open_records
    return {"committed_records": committed, "aborted_records": aborted, "open_records": still_open}


def section(summary: dict[str, int]) -> tuple[str, str, str]:
    """(id, title, HTML) of the report section."""
    rows = [("committed (counted as offset commits)", summary["committed_records"]),
            ("aborted (left out)", summary["aborted_records"]),
            ("open at the end of the log (left out)", summary["open_records"])]
    body = "".join(f"<tr><td>{html.escape(label)}</td><td>{count}</td></tr>" for label, count in rows)
    return (SECTION_ID, "Transactional offset commits",
            f"<table><tr><th>transaction</th><th>offset commit records</th></tr>{body}</table>")
