"""Shared builders for the log tests."""

from __future__ import annotations

from pathlib import Path

from coordinator.log.batch import build_batch, iter_batches, iter_records
from coordinator.log.partition import LogConfig, Partition


def kv_batch(keys_values, timestamp: int = 1_000) -> bytes:
    return build_batch([(k, v) for k, v in keys_values], timestamp=timestamp)


def simple_batch(i: int, n: int = 3, timestamp: int = 1_000) -> bytes:
    return build_batch([(f"k{i}-{j}".encode(), f"v{i}-{j}".encode()) for j in range(n)], timestamp=timestamp)


def open_partition(root: Path, name: str = "t-0", **config) -> Partition:
    return Partition(root / name, LogConfig(**config))


def read_everything(p: Partition) -> list:
    """Every record of the partition from its start, CRCs verified."""
    records, offset = [], p.log_start_offset
    while offset < p.log_end_offset:
        buf = p.read(offset, 1 << 30)
        if not buf:
            break
        for pos, h in iter_batches(buf, verify=True):
            records.extend(iter_records(buf, pos))
            offset = h.last_offset + 1
    return records
