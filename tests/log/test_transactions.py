"""Producer state of a partition: sequences and epochs, open and aborted transactions, the LSO,
commit/abort markers in Kafka's format, and the same state rebuilt from the log on open."""

from __future__ import annotations

import struct

import pytest

from coordinator.log.batch import BatchHeader, build_batch, iter_batches, iter_records
from coordinator.log.transactions import AbortedTxn, ProduceError, ProducerState, control_batch
from protocol.error_codes import ErrorCode
from tests.log.helpers import open_partition

P, Q = 4000, 4001


def txn_batch(pid: int, epoch: int, seq: int, n: int = 3, transactional: bool = True) -> bytes:
    return build_batch([(None, f"v{seq + i}".encode()) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, timestamp=1_000, transactional=transactional)


def append(partition, state: ProducerState, batch: bytes) -> int:
    header = BatchHeader.parse(batch)
    duplicate = state.check(header)
    if duplicate is not None:
        return duplicate
    base, _ = partition.append(batch)
    state.record(header, base, batch)
    return base


def rebuilt(partition) -> ProducerState:
    state = ProducerState()
    buf = partition.read(partition.log_start_offset, 1 << 30)
    for pos, header in iter_batches(buf):
        state.record(header, header.base_offset, buf[pos:pos + header.size])
    return state


def test_a_control_batch_is_kafkas_end_transaction_marker():
    batch = control_batch(P, 2, commit=True, coordinator_epoch=5, timestamp=1_234)
    header = BatchHeader.parse(batch)
    assert header.attributes == 0x30 and header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (P, 2, -1)
    [record] = iter_records(batch)
    assert struct.unpack(">hh", record.key) == (0, 1)
    assert struct.unpack(">hi", record.value) == (0, 5)
    abort = next(iter(iter_records(control_batch(P, 2, commit=False, coordinator_epoch=0, timestamp=1))))
    assert struct.unpack(">hh", abort.key) == (0, 0)


# docs/spec/transactions.md#case-21, docs/spec/transactions.md#case-22, docs/spec/transactions.md#case-23,
# docs/spec/transactions.md#case-26
def test_open_transactions_hold_the_lso_and_aborts_are_indexed(tmp_path):
    partition = open_partition(tmp_path)
    state = ProducerState()
    assert append(partition, state, txn_batch(P, 0, 0)) == 0  # A: 0-2
    assert append(partition, state, txn_batch(Q, 0, 0, n=2)) == 3  # B: 3-4
    assert state.last_stable_offset(partition.high_watermark) == 0
    base, _ = partition.append(control_batch(Q, 0, True, 0, 1))  # B commits at 5
    state.apply_marker(Q, 0, (1, 0), base)
    assert state.last_stable_offset(partition.high_watermark) == 0  # A still open
    base, _ = partition.append(control_batch(P, 0, False, 0, 1))  # A aborts at 6
    state.apply_marker(P, 0, (0, 0), base)
    assert state.last_stable_offset(partition.high_watermark) == 7
    assert state.aborted == [AbortedTxn(P, 0, 6)]
    assert state.aborted_between(0, 7) == [AbortedTxn(P, 0, 6)]
    assert state.aborted_between(7, 8) == []
    again = rebuilt(partition)
    assert (again.aborted, again.open_txns) == (state.aborted, state.open_txns)
    assert again.last_stable_offset(partition.high_watermark) == 7


# docs/spec/transactions.md#case-20
def test_retries_are_answered_with_the_original_offset_and_gaps_refused(tmp_path):
    partition = open_partition(tmp_path)
    state = ProducerState()
    append(partition, state, txn_batch(P, 0, 0, n=5, transactional=False))
    assert append(partition, state, txn_batch(P, 0, 0, n=5, transactional=False)) == 0
    assert partition.log_end_offset == 5
    with pytest.raises(ProduceError) as gap:
        state.check(BatchHeader.parse(txn_batch(P, 0, 7, transactional=False)))
    assert gap.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


# docs/spec/transactions.md#case-31
def test_a_fencing_marker_refuses_the_old_epoch(tmp_path):
    partition = open_partition(tmp_path)
    state = ProducerState()
    append(partition, state, txn_batch(P, 0, 0))
    base, _ = partition.append(control_batch(P, 1, False, 0, 1))
    state.apply_marker(P, 1, (0, 0), base)
    with pytest.raises(ProduceError) as stale:
        state.check(BatchHeader.parse(txn_batch(P, 0, 3)))
    assert stale.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check(BatchHeader.parse(txn_batch(P, 2, 0))) is None  # the new producer starts at 0
    with pytest.raises(ProduceError) as old_marker:
        state.check_marker(P, 0, 0)
    assert old_marker.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(ProduceError) as old_coordinator:
        state.check_marker(P, 1, -5)
    assert old_coordinator.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED


# docs/spec/transactions.md#case-18
def test_a_plain_batch_of_a_producer_inside_a_transaction_is_refused(tmp_path):
    partition = open_partition(tmp_path)
    state = ProducerState()
    append(partition, state, txn_batch(P, 0, 0))
    with pytest.raises(ProduceError) as refused:
        state.check(BatchHeader.parse(txn_batch(P, 0, 3, transactional=False)))
    assert refused.value.code == ErrorCode.INVALID_TXN_STATE


def test_the_dump_shows_markers_as_kafka_dump_log_does(tmp_path):
    from coordinator.log.dump import dump

    partition = open_partition(tmp_path)
    partition.append(txn_batch(P, 0, 0))
    partition.append(control_batch(P, 0, True, 3, 1))
    partition.flush()
    lines = list(dump(tmp_path / "t-0"))
    assert any("isTransactional: true isControl: true" in line for line in lines)
    assert any(line.endswith("endTxnMarker: COMMIT coordinatorEpoch: 3") for line in lines)


def keyed_txn_batch(pid: int, seq: int, key: bytes, value: bytes) -> bytes:
    return build_batch([(key, value)], producer_id=pid, producer_epoch=0, base_sequence=seq, timestamp=1_000,
                       transactional=True)


# docs/spec/transactions.md#case-52, docs/spec/transactions.md#case-53
def test_compaction_drops_aborted_data_and_leaves_open_transactions_alone(tmp_path):
    from coordinator.log.cleaner import compact
    from tests.log.helpers import read_everything

    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact")
    p.append(keyed_txn_batch(P, 0, b"k", b"a"))  # committed
    p.append(control_batch(P, 0, True, 0, 1))
    p.append(keyed_txn_batch(Q, 0, b"k", b"b"))  # aborted: must not shadow "a"
    p.append(control_batch(Q, 0, False, 0, 1))
    p.append(keyed_txn_batch(P, 1, b"j", b"open"))  # open: the LSO
    p.append(build_batch([(b"j", b"plain")], timestamp=1_000))  # past the LSO: not compacted away
    p.append(build_batch([(b"z", b"active")], timestamp=1_000))
    assert len(p.segments) > 2
    compact(p, now_ms=10_000)
    kept = [(r.key, r.value) for r in read_everything(p) if r.key in (b"k", b"j")]
    assert kept == [(b"k", b"a"), (b"j", b"open"), (b"j", b"plain")]
