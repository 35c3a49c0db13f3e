"""Log compaction for compacted partitions (``__consumer_offsets``): keep the newest record per key.

"Newest" is judged over the whole log, the active segment included, but only CLOSED
segments are rewritten (the active one still takes appends). Records keep their offsets:
a batch that loses records is rebuilt with base offset = its first kept offset and the
kept records' deltas relative to it. Tombstones (value None) whose batch is older than
``delete_retention_ms`` go too, once nothing older for their key is left to shadow.
Control batches (transaction markers) are copied unchanged.

Swap protocol, crash-safe at every step:
  1. write ``<base>.<end>.cleaned`` and fsync it  (crash: the leftover is deleted on open)
  2. rename to ``<base>.<end>.swap``, fsync the dir  (crash: open completes the swap)
  3. delete the old ``.log`` files in [base, end), rename the swap to ``<base>.log``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import structlog

from .batch import (TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT, BatchHeader, Record, assemble_batch, encode_record,
                    iter_batches, iter_records)
from .partition import CLEANED_SUFFIX, SWAP_SUFFIX, Partition, _fsync_dir, swap_name
from .segment import Segment

log = structlog.get_logger(__name__)

_KEPT_ATTRIBUTES = TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT  # rebuilt batches are uncompressed


@dataclass(slots=True)
class CleanResult:
    segments_cleaned: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_kept: int = 0
    records_removed: int = 0


def latest_offsets(partition: Partition) -> dict[bytes, int]:
    """key -> offset of its newest record, across every segment."""
    newest: dict[bytes, int] = {}
    for seg in partition.segments:
        data = seg.read_all()
        for pos, h in iter_batches(data):
            if h.is_control:
                continue
            for r in iter_records(data, pos):
                if r.key is not None:
                    newest[r.key] = r.offset
    return newest


def compact(partition: Partition, now_ms: int, delete_retention_ms: int | None = None) -> CleanResult:
    """Rewrite the closed segments of ``partition`` keeping only live records. Runs synchronously.

    Must run on the thread that appends (it swaps segments in place); for large logs a
    caller can move the write phase to a thread once a prepare/commit split exists.
    """
    result = CleanResult()
    group = partition.segments[:-1]
    if not group:
        return result
    retention = partition.config.delete_retention_ms if delete_retention_ms is None else delete_retention_ms
    tombstone_horizon = now_ms - retention
    newest = latest_offsets(partition)
    base, end = group[0].base_offset, partition.active.base_offset
    cleaned = partition.path / swap_name(base, end, CLEANED_SUFFIX)
    fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for seg in group:
            result.bytes_before += seg.size
            result.bytes_after += _clean_segment(fd, seg, newest, tombstone_horizon, result)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        cleaned.unlink(missing_ok=True)
        raise
    os.close(fd)
    swap = cleaned.with_name(swap_name(base, end, SWAP_SUFFIX))
    os.replace(cleaned, swap)
    _fsync_dir(partition.path)  # the swap is now committed: recovery finishes it
    partition.replace_segments(group, swap)
    result.segments_cleaned = len(group)
    log.info("log_compacted", path=str(partition.path), segments=len(group), bytes_before=result.bytes_before,
             bytes_after=result.bytes_after, records_removed=result.records_removed)
    return result


def _clean_segment(fd: int, seg: Segment, newest: dict[bytes, int], tombstone_horizon: int,
                   result: CleanResult) -> int:
    """Append the live part of ``seg`` to ``fd``; returns bytes written."""
    data = seg.read_all()  # one segment in memory at a time (segment.bytes bounds it)
    out: list[bytes] = []
    for pos, h in iter_batches(data):
        raw = data[pos:pos + h.size]
        if h.is_control:
            out.append(raw)
            continue
        records = list(iter_records(data, pos))
        expired = h.max_timestamp < tombstone_horizon
        kept = [r for r in records
                if (r.key is None or newest.get(r.key) == r.offset) and not (r.value is None and expired)]
        result.records_kept += len(kept)
        result.records_removed += len(records) - len(kept)
        if len(kept) == len(records):
            out.append(raw)  # untouched: keep the original bytes (and any compression)
        elif kept:
            out.append(rebuild_batch(h, kept))
    blob = b"".join(out)
    written = os.write(fd, blob)
    if written != len(blob):
        raise OSError(f"short write while cleaning {seg.path}")
    return written


def rebuild_batch(h: BatchHeader, kept: list[Record]) -> bytes:
    """An uncompressed batch of ``kept`` with their original offsets and timestamps and ``h``'s producer."""
    base = kept[0].offset
    base_ts = h.base_timestamp
    encoded = [encode_record(r.offset - base, r.timestamp - base_ts, r.key, r.value, r.headers) for r in kept]
    sequence = h.base_sequence + (base - h.base_offset) if h.base_sequence >= 0 else -1
    return assemble_batch(encoded, base_offset=base, last_offset_delta=kept[-1].offset - base,
                          base_timestamp=base_ts, max_timestamp=max(r.timestamp for r in kept),
                          attributes=h.attributes & _KEPT_ATTRIBUTES, producer_id=h.producer_id,
                          producer_epoch=h.producer_epoch, base_sequence=sequence,
                          partition_leader_epoch=h.partition_leader_epoch)
