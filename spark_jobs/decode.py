"""Decode `__consumer_offsets` segment files into flat columns, with the server's own codec.

No Spark here (the data source in `reader.py` and the generator's checks use this), so it can be
tested and benchmarked alone. Batches are framed by `coordinator.log.segment.scan_batches`, records
split by `coordinator.log.batch.iter_records`, keys and values decoded by
`coordinator.records.decode_record_versions`: there is no second implementation of the format.

Which files are read (`find_segments`): a data dir (every `__consumer_offsets-N/` under it), one
partition dir, one `.log` file, or a plain directory of `.log` files copied from another server
(an export: the partition then comes from the directory name when it parses, else -1).

A file is read up to its first bad batch, as the server's loader does; the problem is logged and
reported in `DecodeStats`, and the rest of that file is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from coordinator.log.batch import CorruptBatchError, iter_records
from coordinator.log.partition import parse_partition_dir
from coordinator.log.segment import SUFFIX, base_offset_of, scan_batches
from coordinator.records import RecordType, UnknownRecordType, decode_record_versions

log = structlog.get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

KIND = {
    RecordType.OFFSET_COMMIT_V0: "offset_commit",
    RecordType.OFFSET_COMMIT: "offset_commit",
    RecordType.GROUP_METADATA: "group_metadata",
    RecordType.CLASSIC_GROUP_REASON: "group_reason",
}

#: Column names in order; `reader.py` gives each its Spark type. One row per record.
COLUMNS: tuple[str, ...] = (
    "partition", "offset", "timestamp", "segment", "record_type", "kind", "value_version", "tombstone",
    "group_id",
    # GroupMetadata
    "protocol_type", "generation", "protocol", "leader", "current_state_timestamp", "members",
    # OffsetCommit
    "topic", "topic_partition", "committed_offset", "leader_epoch", "metadata", "commit_timestamp",
    "expire_timestamp",
    # ClassicGroupReason (KIP-800)
    "reason_api", "reason_member_id", "reason_instance_id", "reason", "reason_timestamp",
)

#: Fields of each element of `members` (GroupMetadataValue.MemberMetadata; byte fields as sizes).
MEMBER_FIELDS: tuple[str, ...] = ("member_id", "group_instance_id", "client_id", "client_host",
                                  "rebalance_timeout_ms", "session_timeout_ms", "subscription_bytes",
                                  "assignment_bytes")


@dataclass(slots=True)
class DecodeStats:
    files: int = 0
    batches: int = 0
    records: int = 0
    unknown_records: int = 0
    problems: list[str] = field(default_factory=list)


def partition_of(segment: Path) -> int:
    """The `__consumer_offsets` partition a segment belongs to, from its directory name (-1: unknown)."""
    try:
        return parse_partition_dir(segment.parent.name)[1]
    except ValueError:
        return -1


def _segments_in(directory: Path) -> list[Path]:
    return sorted((p for p in directory.iterdir() if p.is_file() and p.name.endswith(SUFFIX)
                   and p.name[:-len(SUFFIX)].isdigit()), key=base_offset_of)


def find_segments(path: Path | str) -> list[Path]:
    """The segment files to read under ``path`` (see the module docstring), in (partition, offset) order."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such log file or directory: {path}")
    own = _segments_in(path)
    if own:  # a partition dir or an exported directory of segments
        return own
    found: list[Path] = []
    for directory in sorted(path.rglob(f"{OFFSETS_TOPIC}-*")):
        if directory.is_dir():
            found += _segments_in(directory)
    return found


def empty_columns() -> dict[str, list]:
    return {name: [] for name in COLUMNS}


def decode_segment(segment: Path, partition: int | None = None, chunk_rows: int = 65536,
                   stats: DecodeStats | None = None) -> Iterator[dict[str, list]]:
    """Yield column chunks (name -> list, all the same length, at most ``chunk_rows`` long) for one file."""
    if partition is None:
        partition = partition_of(segment)
    stats = stats if stats is not None else DecodeStats()
    stats.files += 1
    seg_name = str(segment)
    cols = empty_columns()
    # Bind every column's append once: this loop runs per record.
    (a_partition, a_offset, a_timestamp, a_segment, a_type, a_kind, a_vv, a_tomb, a_group,
     a_ptype, a_gen, a_proto, a_leader, a_cst, a_members,
     a_topic, a_tpart, a_coff, a_epoch, a_meta, a_cts, a_ets,
     a_rapi, a_rmember, a_rinstance, a_reason, a_rts) = (cols[name].append for name in COLUMNS)
    n = 0
    fd = os.open(segment, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        try:
            for pos, header, view in scan_batches(fd, size, verify=True):
                stats.batches += 1
                if header.is_control:
                    continue  # transaction markers carry no coordinator record
                for rec in iter_records(view):
                    try:
                        decoded = decode_record_versions(rec.key, rec.value)
                    except UnknownRecordType as e:
                        # Kept as a row (type and position only), as Kafka's loader skips but keeps them.
                        stats.unknown_records += 1
                        record_type, kind, key, value, vv = e.record_type, "unknown", None, None, None
                    else:
                        record_type, kind = decoded.record_type, KIND[decoded.record_type]
                        key, value, vv = decoded.key, decoded.value, decoded.value_version
                    a_partition(partition); a_offset(rec.offset); a_timestamp(rec.timestamp); a_segment(seg_name)
                    a_type(record_type); a_kind(kind); a_vv(vv); a_tomb(rec.value is None)
                    a_group(None if key is None else key.group)
                    if kind == "group_metadata" and value is not None:
                        a_ptype(value.protocol_type); a_gen(value.generation); a_proto(value.protocol)
                        a_leader(value.leader); a_cst(value.current_state_timestamp)
                        a_members([(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout, m.session_timeout, len(m.subscription or b""),
                                    len(m.assignment or b"")) for m in value.members])
                    else:
                        a_ptype(None); a_gen(None); a_proto(None); a_leader(None); a_cst(None); a_members(None)
                    if kind == "offset_commit":
                        a_topic(key.topic); a_tpart(key.partition)
                        if value is not None:
                            a_coff(value.offset); a_epoch(value.leader_epoch); a_meta(value.metadata)
                            a_cts(value.commit_timestamp)
                            a_ets(None if value.expire_timestamp == -1 else value.expire_timestamp)
                        else:
                            a_coff(None); a_epoch(None); a_meta(None); a_cts(None); a_ets(None)
                    else:
                        a_topic(None); a_tpart(None); a_coff(None); a_epoch(None); a_meta(None); a_cts(None)
                        a_ets(None)
                    if kind == "group_reason" and value is not None:
                        a_rapi(value.api); a_rmember(value.member_id); a_rinstance(value.group_instance_id)
                        a_reason(value.reason); a_rts(value.timestamp)
                    else:
                        a_rapi(None); a_rmember(None); a_rinstance(None); a_reason(None); a_rts(None)
                    n += 1
                    if n == chunk_rows:
                        stats.records += n
                        yield cols
                        cols = empty_columns()
                        (a_partition, a_offset, a_timestamp, a_segment, a_type, a_kind, a_vv, a_tomb, a_group,
                         a_ptype, a_gen, a_proto, a_leader, a_cst, a_members,
                         a_topic, a_tpart, a_coff, a_epoch, a_meta, a_cts, a_ets,
                         a_rapi, a_rmember, a_rinstance, a_reason, a_rts) = (cols[name].append for name in COLUMNS)
                        n = 0
        except CorruptBatchError as e:
            # Same rule as the server's loader: the log ends at the first bad batch.
            problem = f"{segment}: stopped at byte {e.position}: {e.reason}"
            stats.problems.append(problem)
            log.warning("segment_read_stopped", segment=seg_name, position=e.position, reason=e.reason)
    finally:
        os.close(fd)
    if n:
        stats.records += n
        yield cols


def decode_rows(path: Path | str) -> Iterator[dict[str, object]]:
    """Every record under ``path`` as a dict (column -> value): for tests and small logs."""
    for segment in find_segments(path):
        for cols in decode_segment(segment):
            names = list(cols)
            for values in zip(*cols.values()):
                yield dict(zip(names, values))


def log_end_offsets(data_dir: Path | str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> log end offset for every topic partition dir under ``data_dir`` other
    than `__consumer_offsets` (what lag is measured against). Only batch headers are read."""
    ends: dict[tuple[str, int], int] = {}
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return ends
    for directory in sorted(data_dir.iterdir()):
        if not directory.is_dir() or directory.name.startswith(OFFSETS_TOPIC + "-"):
            continue
        try:
            topic, partition = parse_partition_dir(directory.name)
        except ValueError:
            continue
        segments = _segments_in(directory)
        if not segments:
            continue
        end = base_offset_of(segments[-1])
        for segment in reversed(segments):  # the newest non-empty segment holds the end
            fd = os.open(segment, os.O_RDONLY)
            try:
                last = None
                try:
                    for _, header, _ in scan_batches(fd, os.fstat(fd).st_size, verify=False):
                        last = header.last_offset
                except CorruptBatchError:
                    pass  # a torn tail: the end is the last whole batch, as the server would truncate
            finally:
                os.close(fd)
            if last is not None:
                end = max(end, last + 1)
                break
        ends[(topic, partition)] = end
    return ends
