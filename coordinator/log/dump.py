"""Render segment files as text, one line per batch and per record (like Kafka's ``kafka-dump-log.sh``).

``dump(path)`` takes a ``.log`` segment or a partition directory and yields lines. A file
that cannot be framed any further gets an ``ERROR`` line naming it and the byte position,
and the dump moves on to the next file. CRC mismatches are reported per batch
(``crcOk: false``) without stopping. Record values are described by an optional
``describe_record(topic, key, value) -> str | None`` (the coordinator record decoder plugs in here).

A data directory (partition directories under it) is dumped partition by partition. Pass a
``problems`` list to collect one entry per ERROR line and per CRC mismatch, so a caller can
set an exit code without parsing the text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from .batch import CODEC_NAMES, CRC_START, BatchHeader, CorruptBatchError, crc32c, iter_records
from .partition import parse_partition_dir
from .segment import SUFFIX, base_offset_of, scan_batches
from .transactions import COMMIT, marker_of_record

DescribeRecord = Callable[[str, "bytes | None", "bytes | None"], "str | None"]


def dump(path: Path | str, describe_record: DescribeRecord | None = None, records: bool = True,
         problems: list[str] | None = None) -> Iterator[str]:
    """Lines describing ``path``: a data directory (its partition directories by topic and number),
    a partition directory (its segments in offset order) or one segment file."""
    path = Path(path)
    if path.is_dir():
        files = sorted((p for p in path.iterdir() if p.name.endswith(SUFFIX)), key=base_offset_of)
        partitions = [] if files else _partition_dirs(path)
        if not files and not partitions:
            yield f"{path}: no segment files"
        for f in files:
            yield from dump_segment(f, describe_record, records, problems)
        for d in partitions:
            yield from dump(d, describe_record, records, problems)
    else:
        yield from dump_segment(path, describe_record, records, problems)


def _partition_dirs(root: Path) -> list[Path]:
    found = []
    for d in root.iterdir():
        try:
            found.append((parse_partition_dir(d.name), d))
        except ValueError:
            continue  # cluster metadata files, lost+found, ...
    return [d for _, d in sorted(found) if d.is_dir()]


def dump_segment(path: Path, describe_record: DescribeRecord | None = None, records: bool = True,
                 problems: list[str] | None = None) -> Iterator[str]:
    # A throwaway list when the caller does not collect: keeps the code below free of None checks.
    problems = [] if problems is None else problems
    topic = _topic_of(path)
    yield f"Dumping {path}"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        problems.append(f"ERROR {path}: cannot open: {e.strerror}")
        yield problems[-1]
        return
    try:
        size = os.fstat(fd).st_size
        batches = 0
        try:
            for pos, h, view in scan_batches(fd, size, verify=False):
                batches += 1
                crc_ok = crc32c(view[CRC_START:]) == h.crc
                if not crc_ok:
                    problems.append(f"{path}: CRC mismatch in the batch at byte {pos}")
                yield _batch_line(pos, h, crc_ok)
                if records:
                    yield from _record_lines(topic, view, h, pos, path, describe_record, problems)
        except CorruptBatchError as e:
            problems.append(f"ERROR {path}: corrupt batch at byte {e.position}: {e.reason}")
            yield problems[-1]
        yield f"{path}: {batches} batches, {size} bytes"
    finally:
        os.close(fd)


def _batch_line(pos: int, h: BatchHeader, crc_ok: bool) -> str:
    return (f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
            f"baseTimestamp: {h.base_timestamp} maxTimestamp: {h.max_timestamp} "
            f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} baseSequence: {h.base_sequence} "
            f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
            f"deleteHorizon: {str(h.has_delete_horizon).lower()} "
            f"compression: {CODEC_NAMES.get(h.compression, h.compression)} position: {pos} size: {h.size} "
            f"crc: {h.crc} crcOk: {str(crc_ok).lower()}")


def _record_lines(topic: str, view: memoryview, h: BatchHeader, pos: int, path: Path,
                  describe_record: DescribeRecord | None, problems: list[str]) -> Iterator[str]:
    try:
        decoded = iter_records(view)
    except CorruptBatchError as e:
        problems.append(f"ERROR {path}: batch at byte {pos}: {e.reason}")
        yield problems[-1]
        return
    for r in decoded:
        line = (f"| offset: {r.offset} timestamp: {r.timestamp} "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {-1 if r.value is None else len(r.value)} "
                f"headers: {len(r.headers)}")
        if h.is_control:
            line += f" {_describe_marker(r.key, r.value)}"
        elif describe_record is not None:
            try:
                described = describe_record(topic, r.key, r.value)
            except Exception as e:  # bad bytes (or a decoder bug) must not end the dump
                described = f"<cannot describe: {e}>"
                problems.append(f"{path}: record at offset {r.offset} (batch at byte {pos}) does not decode: {e}")
            if described is not None:
                line += f" {described}"
        yield line


def _describe_marker(key: bytes | None, value: bytes | None) -> str:
    """A control record as kafka-dump-log.sh shows it: `endTxnMarker: COMMIT coordinatorEpoch: 0`."""
    marker = marker_of_record(key, value)
    if marker is None:
        return f"controlRecord: {-1 if key is None else len(key)} bytes"
    kind, epoch = marker
    return f"endTxnMarker: {'COMMIT' if kind == COMMIT else 'ABORT'} coordinatorEpoch: {epoch}"


def _topic_of(path: Path) -> str:
    try:
        return parse_partition_dir(path.parent.name)[0]
    except ValueError:
        return path.parent.name
