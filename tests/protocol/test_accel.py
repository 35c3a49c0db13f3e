"""The compiled accelerator against the pure-Python reference (protocol/accel.py).

Property tests: hypothesis draws messages, record batches and offset commits, and corrupts valid
bytes (truncation, a flipped byte, garbage); every operation runs in this process (compiled, when
the accelerator is built) and in a worker process forced pure (GROUPCOORD_PURE_PYTHON=1) on the
same input, and both must give the same result or the same error. Without a build (no compiler,
or the run itself forced pure) there is nothing to compare and these tests skip; the loader's own
tests (staleness, the switch, server_ready) run either way.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from protocol import accel
from protocol.messages import MESSAGES
from tests.protocol import accel_ops
from tests.protocol.strategies import message_strategy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("GC_TEST_HYPOTHESIS_EXAMPLES", "40"))
_LENGTH = struct.Struct(">I")

# The hot requests the server decodes, and the responses it encodes (issue 23).
HOT_APIS = ("Heartbeat", "OffsetCommit", "OffsetFetch", "JoinGroup", "SyncGroup", "ConsumerGroupHeartbeat",
            "Produce", "Fetch")

needs_build = pytest.mark.skipif(
    os.environ.get(accel.PURE_ENV, "") not in ("", "0") or not accel.read_manifest(),
    reason="no compiled accelerator in this run (make accel; GROUPCOORD_PURE_PYTHON unset)")


class PureWorker:
    def __init__(self) -> None:
        env = {**os.environ, accel.PURE_ENV: "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.protocol.accel_ops"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def outcome(self, operation: str, *args: Any) -> tuple[str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = pickle.dumps((operation, args))
        self.proc.stdin.write(_LENGTH.pack(len(request)) + request)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(4)
        assert len(head) == 4, "the pure worker died"
        answer: tuple[str, str] = pickle.loads(self.proc.stdout.read(_LENGTH.unpack(head)[0]))
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def pure() -> Iterator[PureWorker]:
    worker = PureWorker()
    yield worker
    worker.close()


def same(pure: PureWorker, operation: str, *args: Any) -> tuple[str, str]:
    compiled = accel_ops.outcome(operation, args)
    assert compiled == pure.outcome(operation, *args)
    return compiled


def _compiled_modules_in_use() -> list[str]:
    return [name for name in accel.ACCELERATED if name in sys.modules and accel.is_compiled(sys.modules[name])]


@needs_build
def test_this_process_runs_the_compiled_modules() -> None:
    """Else the comparisons below would compare pure with pure and prove nothing."""
    assert accel.status() == "compiled", accel.stale_modules()
    assert "protocol.generated.heartbeat" in _compiled_modules_in_use()
    assert "coordinator.log.batch" in _compiled_modules_in_use()


@needs_build
def test_every_accelerated_module_was_built() -> None:
    """`make accel` leaves a module Cython refuses pure and still succeeds (the server must start
    anyway); here such a module fails, so a .pxd that stops compiling cannot go unnoticed."""
    with open(accel.MANIFEST, encoding="ascii") as manifest:
        built = {line.split()[0] for line in manifest if line.strip()}
    assert sorted(set(accel.ACCELERATED) - built) == []


def _corrupt(data: bytes, draw: st.DrawFn) -> bytes:
    how = draw(st.sampled_from(["as is", "truncate", "flip", "append", "garbage"]))
    if how == "truncate" and data:
        return data[:draw(st.integers(0, len(data) - 1))]
    if how == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    if how == "append":
        return data + draw(st.binary(min_size=1, max_size=8))
    if how == "garbage":
        return draw(st.binary(max_size=64))
    return data


@st.composite
def request_bytes(draw: st.DrawFn) -> tuple[str, int, bytes]:
    cls = MESSAGES[draw(st.sampled_from(HOT_APIS)) + "Request"]
    version = draw(st.sampled_from(sorted(cls.decoders)))
    message = draw(message_strategy(cls, version))
    return cls.__name__, version, _corrupt(message.encode(version), draw)


@needs_build
@settings(max_examples=EXAMPLES * 5, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=request_bytes())
def test_request_decoders_agree(pure: PureWorker, case: tuple[str, int, bytes]) -> None:
    same(pure, "decode", *case)


@st.composite
def request_frames(draw: st.DrawFn) -> bytes:
    from protocol.generated.headers import RequestHeader

    cls = MESSAGES[draw(st.sampled_from(HOT_APIS)) + "Request"]
    version = draw(st.sampled_from(sorted(cls.decoders)))
    message = draw(message_strategy(cls, version))
    header = RequestHeader(cls.api_key, version, draw(st.integers(-(2**31), 2**31 - 1)),
                           draw(st.none() | st.text(max_size=8)))
    header_version = 2 if version in cls.flexible_versions else 1
    return _corrupt(header.encode(header_version) + message.encode(version), draw)


@needs_build
@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=request_frames())
def test_request_frames_agree(pure: PureWorker, frame: bytes) -> None:
    same(pure, "decode_request_frame", frame)


@st.composite
def responses(draw: st.DrawFn) -> tuple[Any, int]:
    cls = MESSAGES[draw(st.sampled_from(HOT_APIS)) + "Response"]
    version = draw(st.sampled_from(sorted(cls.encoders)))
    # Drawn for any version, so fields the version cannot carry are sometimes set: encoding errors too.
    other = draw(st.sampled_from(sorted(cls.encoders)))
    return draw(message_strategy(cls, other)), version


@needs_build
@settings(max_examples=EXAMPLES * 5, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=responses(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_encoders_agree(pure: PureWorker, case: tuple[Any, int], correlation_id: int) -> None:
    message, version = case
    same(pure, "encode", message, version)
    same(pure, "encode_response_frame", correlation_id, message.api_key, version, message)


_KEYS = st.none() | st.binary(max_size=40)
_HEADERS = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=2)
_RECORD = st.tuples(_KEYS, _KEYS) | st.tuples(_KEYS, _KEYS, _HEADERS) | st.tuples(
    _KEYS, _KEYS, st.integers(0, 2**42), _HEADERS)


@needs_build
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=st.lists(_RECORD, min_size=1, max_size=6), base_offset=st.integers(0, 2**40),
       timestamp=st.integers(0, 2**42), transactional=st.booleans(),  # None would read the clock
       producer_id=st.integers(-1, 2**40), data=st.data())
def test_batches_agree(pure: PureWorker, records: list[tuple[Any, ...]], base_offset: int, timestamp: int | None,
                       transactional: bool, producer_id: int, data: st.DataObject) -> None:
    """Framing, CRC-32C and the record columns: the same batch bytes, and the same reading of them
    (or the same CorruptBatchError) however they are damaged."""
    kind, _ = same(pure, "build_batch", records, base_offset, timestamp, transactional, producer_id)
    if kind == "error":
        return
    log = accel_ops.build_batch(records, base_offset, timestamp, transactional, producer_id)
    log += accel_ops.build_keyed_batch_from_columns([b"k%d" % i for i in range(3)], [b"v", None, b""], 7,
                                                    base_offset + 10)
    damaged = _corrupt(log, data.draw)
    for verify in (False, True):
        same(pure, "read_batches", damaged, verify)
        same(pure, "frame_chunk", damaged, verify)  # the Spark reader's framing (chunk_columns.pxd, batch.pxd)


_COLUMN_BYTES = st.binary(max_size=40) | st.sampled_from([b"k" * 200, b"v" * 9000])  # one- to three-byte lengths


@needs_build
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(columns=st.lists(st.tuples(_COLUMN_BYTES | st.none(), _COLUMN_BYTES | st.none() | st.just("v")), max_size=140),
       values_short=st.booleans(), as_tuples=st.booleans(),
       timestamp=st.integers(0, 2**42) | st.sampled_from([2**63 - 1, 2**63, -(2**63), 1.0, True]),
       base_offset=st.integers(-(2**63) - 1, 2**63))
def test_keyed_batches_agree(pure: PureWorker, columns: list[tuple[Any, Any]], values_short: bool, as_tuples: bool,
                             timestamp: Any, base_offset: int) -> None:
    """A coordinator's batch from columns (batch.pxd frames it in C): the same bytes or the same error,
    with tombstones, null keys, offset deltas past 64, long fields and fields out of range."""
    keys: Any = [key for key, _ in columns]
    values: Any = [value for _, value in columns][:-1 if values_short else None]
    if as_tuples:
        keys, values = tuple(keys), tuple(values)
    same(pure, "build_keyed_batch_from_columns", keys, values, timestamp, base_offset)


@st.composite
def records_sections(draw: st.DrawFn) -> tuple[bytes, int]:
    """A batch's records section (its records as written, then damaged) and a record count."""
    records = draw(st.lists(_RECORD, min_size=1, max_size=6))
    try:
        data = accel_ops.build_batch(records, 0, draw(st.integers(0, 2**42)), False, -1)[61:]  # past the header
    except (TypeError, ValueError):  # records build_batch refuses (test_batches_agree compares those)
        assume(False)
    count = len(records) + draw(st.sampled_from([0, 0, 0, -1, 1]))
    return _corrupt(data, draw), count


@needs_build
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(section=records_sections())
def test_record_framing_agrees_on_any_bytes(pure: PureWorker, section: tuple[bytes, int]) -> None:
    """The per-record loop (batch.pxd types it): the same columns or the same error on any bytes."""
    same(pure, "frame_records", *section)


_NAME = st.text(max_size=10)


@needs_build
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(group=_NAME, topic=_NAME, partition=st.integers(-(2**31), 2**31 - 1), offset=st.integers(-(2**63), 2**63 - 1),
       epoch=st.integers(-(2**31), 2**31 - 1), metadata=st.text(max_size=20),
       commit=st.integers(-(2**63), 2**63 - 1), expire=st.none() | st.integers(-(2**63), 2**63 - 1))
def test_offset_commit_records_agree(pure: PureWorker, group: str, topic: str, partition: int, offset: int,
                                     epoch: int, metadata: str, commit: int, expire: int | None) -> None:
    kind, _ = same(pure, "offset_commit_record", group, topic, partition, offset, epoch, metadata, commit, expire)
    if kind == "ok":
        record = accel_ops.offsets.offset_commit_record(group, topic, partition, offset, epoch, metadata, commit,
                                                        expire)
        same(pure, "decode_record", record.key, record.value)


@needs_build
@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(group=_NAME, topic=_NAME, commit=st.integers(0, 2**42), partitions=st.lists(
    st.tuples(st.integers(0, 2**31 - 1), st.one_of(st.integers(-1, 2**40), st.integers(-(2**64), 2**64)),
              st.one_of(st.integers(-1, 9), st.integers(-(2**32), 2**32)), st.one_of(st.just(""), st.text(max_size=6))),
    max_size=4))
def test_offset_commit_runs_agree(pure: PureWorker, group: str, topic: str, commit: int,
                                  partitions: list[tuple[int, int, int, str]]) -> None:
    """Fields out of range included: the compiled build packs empty metadata in C (records/offsets.pxd)."""
    same(pure, "offset_commit_run", group, topic, partitions, commit)


@needs_build
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(commit=st.integers(0, 2**42), partitions=st.lists(
    st.tuples(st.integers(0, 9), st.integers(-1, 2**40), st.integers(-1, 9), st.none() | st.text(max_size=3),
              st.sampled_from(accel_ops.PARTITION_SHAPES)), max_size=6))
def test_offset_commit_runs_read_partitions_as_attributes(pure: PureWorker, commit: int,
                                                          partitions: list[tuple[Any, ...]]) -> None:
    """The compiled run reads a request partition's slots in C (records/offsets.pxd): generated request
    partitions, plain objects, a field unset, a subclass's property, mixed in one run, give what the
    pure build's attribute reads give, or the same AttributeError."""
    same(pure, "offset_commit_run", "g", "t", partitions, commit)


@needs_build
def test_offset_commit_runs_see_a_partition_class_change(pure: PureWorker) -> None:
    kind, _ = same(pure, "offset_commit_run_class_changed", 41)
    before, after = accel_ops.offset_commit_run_class_changed(41)
    assert kind == "ok" and before != after  # the property's offset (42) is what the second run wrote


_FIELD = st.one_of(st.integers(), st.text(max_size=4), st.none(), st.lists(st.integers(), max_size=2))
_FIELDS = st.tuples(_FIELD, _FIELD, _FIELD, _FIELD, _FIELD)  # an OffsetAndMetadata's, any values


@needs_build
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(fields=_FIELDS, other=_FIELDS)
def test_stored_offsets_agree(pure: PureWorker, fields: tuple[Any, ...], other: tuple[Any, ...]) -> None:
    """The stored form of a commit is an extension type compiled (records/offsets.pxd), a slotted
    class pure: the same dataclass for any field values, unhashable ones included."""
    same(pure, "stored_offset", *fields, other)
    same(pure, "stored_offset", *fields, fields)


@needs_build
@settings(max_examples=EXAMPLES * 3, deadline=None, suppress_health_check=list(HealthCheck))
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=60))
def test_record_decoding_agrees_on_any_bytes(pure: PureWorker, key: bytes, value: bytes | None) -> None:
    same(pure, "decode_record", key, value)


@st.composite
def offsets_logs(draw: st.DrawFn) -> bytes:
    """A `__consumer_offsets` log: tests/records/test_loaded.py's batches (commits of every kind,
    tombstones, group metadata, unknown types, damaged records, transactions and markers), and
    commits of many partitions of one topic (the batches the loader slices by strides)."""
    from coordinator.log.transactions import control_batch
    from coordinator.records import offset_commit_record
    from tests.records.test_loaded import logs

    log = b""
    for batch in draw(logs()):
        if len(batch) == 2:
            log += accel_ops.build_keyed_batch_from_columns(list(batch[0]), list(batch[1]), 5, 0)
        elif batch[5] is not None:
            log += control_batch(batch[2], batch[3], batch[5], 0, 5)
        else:
            log += accel_ops.build_batch(list(zip(batch[0], batch[1], strict=True)), 0, 5, True, batch[2])
        if draw(st.booleans()):
            group, epoch = draw(st.sampled_from(["g", "h"])), draw(st.integers(-1, 3))
            commits = [offset_commit_record(group, "t", p, draw(st.integers(0, 9)) + p, epoch, "", 7)
                       for p in range(draw(st.integers(1, 120)))]
            log += accel_ops.build_keyed_batch_from_columns([r.key for r in commits], [r.value for r in commits], 7, 0)
    return log


@needs_build
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(log=offsets_logs())
def test_loading_a_log_agrees(pure: PureWorker, log: bytes) -> None:
    """The loader (framing by strides, resolving, offset commits as columns, replay): the same
    state from the same log, or the same error."""
    same(pure, "load_log", log)


def _status_in(env: dict[str, str]) -> str:
    code = "import coordinator.server.app, protocol.accel as a; print(a.status(), ','.join(a.stale_modules()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                         text=True, check=True, timeout=120)
    return out.stdout.strip()


def test_pure_python_switch_turns_the_accelerator_off() -> None:
    assert _status_in({accel.PURE_ENV: "1"}) == "pure"


@needs_build
def test_the_build_is_used_without_the_switch() -> None:
    assert _status_in({accel.PURE_ENV: ""}) == "compiled"


@needs_build
def test_the_hot_decoders_are_compiled_typed() -> None:
    """The generated .pxd took effect: the compiled decoder is typed (its buffer is `bytes`, so a
    bytearray is refused) where the pure one, the reference, reads anything it can slice. Every
    caller hands decoders bytes (protocol.frames, Message.decode_from)."""
    from protocol.generated import heartbeat

    frame = b"\x02g\x00\x00\x00\x01\x02m\x00\x00"
    assert accel.is_compiled(heartbeat)
    message, pos = heartbeat.d_HeartbeatRequest_v4(frame, 0, len(frame))
    assert (message.group_id, message.generation_id, message.member_id, pos) == ("g", 1, "m", len(frame))
    with pytest.raises(TypeError):
        heartbeat.d_HeartbeatRequest_v4(bytearray(frame), 0, len(frame))  # type: ignore[arg-type]  # the point


def test_a_pxd_change_makes_its_module_stale(tmp_path: Path) -> None:
    """The build's CRC covers the declarations Cython compiled the module with, not the .py alone."""
    source = tmp_path / "m.py"
    source.write_text("def d(buf, pos):\n    return buf[pos]\n")
    alone = accel.source_crc(str(source))
    (tmp_path / "m.pxd").write_text("cpdef d(bytes buf, Py_ssize_t pos)\n")
    typed = accel.source_crc(str(source))
    (tmp_path / "m.pxd").write_text("cpdef d(object buf, Py_ssize_t pos)\n")
    assert len({alone, typed, accel.source_crc(str(source))}) == 3


def test_a_stale_build_never_shadows_its_source(tmp_path: Path) -> None:
    """A compiled module whose source changed since its build (a regenerated codec, an edit) imports
    pure, and is named as stale; the others stay compiled."""
    manifest = {"protocol.generated.heartbeat": ("protocol.generated.heartbeat.so", 12345)}
    finder = accel.CompiledFinder(manifest)
    import protocol.generated

    assert finder.find_spec("protocol.generated.heartbeat", protocol.generated.__path__) is None
    assert finder.stale == {"protocol.generated.heartbeat"}
    assert finder.find_spec("protocol.generated.fetch", protocol.generated.__path__) is None  # not in the manifest
    assert finder.stale == {"protocol.generated.heartbeat"}
