"""Small calculations over collected results, shared by the group-history job (`group_history`)
and the report's view (`html_report`), so that the view does not import the job (and Spark with it)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pyarrow as pa


def top_counts(values: Iterable[Any], limit: int = 20) -> dict[str, int]:
    """The ``limit`` most frequent values (free-text reasons can be unique per member id), most
    frequent first, ties by value with null first: Spark's `orderBy(desc(count), value)`."""
    counts = Counter(values)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0] is not None, "" if kv[0] is None else kv[0]))
    return {str(value): n for value, n in ranked[:limit]}


def group_sums(table: pa.Table, key: str, value: str) -> list[tuple[Any, int]]:
    """(key, sum of value) per key, largest sum first, ties by key (Spark's `orderBy(desc, key)`)."""
    sums = table.group_by(key, use_threads=False).aggregate([(value, "sum")]).to_pylist()
    return sorted(((r[key], r[f"{value}_sum"] or 0) for r in sums), key=lambda kv: (-kv[1], kv[0]))
