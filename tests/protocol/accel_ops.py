"""What the accelerator's property tests run in both builds: the same operation on the same input,
its outcome in a form that compares across processes (repr of the result, or the error's type and
message).

The compiled build runs these in the test process; the pure build in a worker process started with
GROUPCOORD_PURE_PYTHON=1 (`python -m tests.protocol.accel_ops`), which answers pickled
`(operation, arguments)` requests read from stdin, length-prefixed, until stdin closes.
"""

from __future__ import annotations

import pickle
import struct
import sys
from typing import Any

import protocol.client  # noqa: F401  (the client's coders: requests encoded for the decoders under test)
from coordinator.log import batch
from coordinator.records import codec, offsets
from protocol import frames
from protocol.messages import MESSAGES

_LENGTH = struct.Struct(">I")


def decode(name: str, version: int, data: bytes) -> Any:
    cls = MESSAGES[name]
    message, pos = cls.decoders[version](data, 0, len(data))
    return message, pos


def encode(message: Any, version: int) -> bytes:
    return message.encode(version)


def decode_request_frame(frame: bytes) -> Any:
    return frames.decode_request(frame)


def encode_response_frame(correlation_id: int, api_key: int, version: int, message: Any) -> bytes:
    return frames.encode_response(correlation_id, api_key, version, message)


def build_batch(records: list[tuple[Any, ...]], base_offset: int, timestamp: int | None, transactional: bool,
                producer_id: int) -> bytes:
    return batch.build_batch(records, base_offset, producer_id=producer_id, timestamp=timestamp,
                             transactional=transactional)


def build_keyed_batch_from_columns(keys: list[bytes], values: list[bytes | None], timestamp: int,
                                   base_offset: int) -> bytes:
    return batch.build_keyed_batch_from_columns(keys, values, timestamp, base_offset)


def read_batches(data: bytes, verify: bool) -> Any:
    """Every batch of `data` as iter_batches yields it, with its records as columns and one by one."""
    out = []
    for pos, header in batch.iter_batches(data, verify=verify):
        columns = batch.record_columns(data, pos, header)
        out.append((pos, repr(header), batch.crc_ok(data, pos), tuple(columns[1:]), columns.records(),
                    list(batch.iter_records(data, pos, header))))
    return out


def frame_chunk(data: bytes, verify: bool) -> Any:
    """A read chunk framed into columns as the Spark reader frames it (`chunk_columns._frame_batches`):
    the columns of the whole batches, the bytes used and the error that stopped it."""
    from coordinator.log.chunk_columns import ChunkColumns, _frame_batches

    out = ChunkColumns()
    used, error = _frame_batches(data, 0, len(data), out, verify, True)
    return (used, repr(error), error and error.position, out.batches, out.offsets, out.timestamps, out.keys,
            out.values, out.headers)


def frame_records(data: bytes, count: int) -> Any:
    """A records section framed by `batch.frame_records_into` (what `frame_chunk` calls per batch)."""
    return batch._frame_records(data, count)


def offset_commit_record(group_id: str, topic: str, partition: int, offset: int, leader_epoch: int, metadata: str,
                         commit_timestamp: int, expire_timestamp: int | None) -> Any:
    record = offsets.offset_commit_record(group_id, topic, partition, offset, leader_epoch, metadata,
                                          commit_timestamp, expire_timestamp)
    return record.key, record.value


class _PlainPartition:  # the fields of an OffsetCommit request's partition the run reads, in a __dict__
    def __init__(self, index: int, offset: int, epoch: int, metadata: str | None) -> None:
        self.partition_index = index
        self.committed_offset = offset
        self.committed_leader_epoch = epoch
        self.committed_metadata = metadata


def _partition(shape: str, index: int, offset: int, epoch: int, metadata: str | None) -> Any:
    """A partition of the run: the generated request class (slots: the compiled build reads them in C,
    records/offsets.pxd), a plain object, a request partition with one field unset (`unset-<field>`),
    or a subclass whose offset is a property."""
    from protocol.messages import OffsetCommitRequest

    request_partition = OffsetCommitRequest.OffsetCommitRequestPartition
    if shape == "plain":
        return _PlainPartition(index, offset, epoch, metadata)
    if shape == "property":
        class OffsetAsProperty(request_partition):  # type: ignore[misc, valid-type]
            __slots__ = ()
            committed_offset = property(lambda self: offset + 1)

        made = object.__new__(OffsetAsProperty)
        made.partition_index, made.committed_leader_epoch, made.committed_metadata = index, epoch, metadata
        return made
    made = request_partition(partition_index=index, committed_offset=offset, committed_leader_epoch=epoch,
                             committed_metadata=metadata)
    if shape.startswith("unset-"):
        delattr(made, shape.removeprefix("unset-"))
    return made


PARTITION_SHAPES = ("request", "plain", "property", "unset-partition_index", "unset-committed_offset",
                    "unset-committed_leader_epoch", "unset-committed_metadata")


def offset_commit_run(group_id: str, topic: str, partitions: list[tuple[Any, ...]], commit_timestamp: int) -> Any:
    """`partitions`: (index, offset, epoch, metadata) or (index, offset, epoch, metadata, shape)."""
    made = [_partition(*p[4:], *p[:4]) if len(p) > 4 else _PlainPartition(*p) for p in partitions]
    run = offsets.offset_commit_run(group_id, topic, made, commit_timestamp)
    return (run.keys, run.values, run.offsets, run.stored_under,
            [(r.key, r.value, r.decoded) for r in run.records()])


def offset_commit_run_class_changed(offset: int) -> Any:
    """Runs of one slotted partition class before and after its offset becomes a property: the compiled
    build's slot offsets, kept per class, must not outlive the change (records/offsets.pxd)."""
    class Slotted:
        __slots__ = ("committed_leader_epoch", "committed_metadata", "committed_offset", "partition_index")

        def __init__(self) -> None:
            self.partition_index, self.committed_offset, self.committed_leader_epoch = 1, offset, -1
            self.committed_metadata = ""

    partition = Slotted()
    before = offsets.offset_commit_run("g", "t", [partition], 5).values
    Slotted.committed_offset = property(lambda self: offset + 1)  # type: ignore[assignment]
    after = offsets.offset_commit_run("g", "t", [partition], 5).values
    return before, after


def stored_offset(offset: Any, leader_epoch: Any, metadata: Any, commit_timestamp: Any, expire_timestamp: Any,
                  other: tuple[Any, ...]) -> Any:
    """OffsetAndMetadata (an extension type in the compiled build, records/offsets.pxd) as a dataclass:
    made by its class call, compared, hashed, replaced, its fields listed, a field it lacks refused."""
    import dataclasses

    stored = offsets.OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
    default = offsets.OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp)
    same = offsets.OffsetAndMetadata(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)
    try:
        stored.partition = 1  # type: ignore[attr-defined]
        refused = "set"
    except AttributeError:
        refused = "refused"
    try:
        hashed = hash(stored) == hash(same)
    except TypeError as exc:  # a field that cannot be hashed
        hashed = f"TypeError: {exc}"
    return (stored, default, stored == same, stored == offsets.OffsetAndMetadata(*other), stored == other,
            stored != same, hashed, [f.name for f in dataclasses.fields(stored)], stored.__match_args__,
            dataclasses.replace(stored, offset=other[0]), refused, type(stored).__name__)


def decode_record(key: bytes, value: bytes | None) -> Any:
    return codec.decode_record(key, value)


def load_log(data: bytes) -> Any:
    """A `__consumer_offsets` log's bytes loaded as a shard loads them (framed, resolved, plain
    commits as columns, replayed): the durable state."""
    from coordinator.core.runtime.shard import GroupShard
    from coordinator.records.loaded import resolved_log_records
    from coordinator.records.transactional import resolve
    from coordinator.server.log_record_store import resolvable_batch

    batches = [resolvable_batch(data[pos:pos + header.size], header) for pos, header in batch.iter_batches(data)]
    return GroupShard.from_log(resolved_log_records(resolve(batches))).durable_view()


OPERATIONS = {f.__name__: f for f in (decode, encode, decode_request_frame, encode_response_frame, build_batch,
                                     build_keyed_batch_from_columns, read_batches, frame_chunk, frame_records,
                                     offset_commit_record,
                                     offset_commit_run, offset_commit_run_class_changed, stored_offset, decode_record,
                                     load_log)}


def outcome(operation: str, args: tuple[Any, ...]) -> tuple[str, str]:
    """("ok", repr of the result) or ("error", "Type: message")."""
    try:
        result = OPERATIONS[operation](*args)
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {exc}"
    return "ok", repr(result)


def serve() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        operation, args = pickle.loads(stdin.read(_LENGTH.unpack(head)[0]))
        answer = pickle.dumps(outcome(operation, args))
        stdout.write(_LENGTH.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    serve()
