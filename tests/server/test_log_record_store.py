"""Loading `__consumer_offsets`: the parallel load (forked workers) reads what the inline one reads."""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import pytest

from coordinator.log.batch import build_keyed_batch
from coordinator.log.manager import LogManager
from coordinator.records import offset_commit_record, offset_commit_tombstone
from coordinator.server import log_record_store
from coordinator.server.log_record_store import OFFSETS_TOPIC_CONFIG, LogRecordStore
from coordinator.topics import OFFSETS_TOPIC


def _fill(root: Path) -> None:
    """Three partitions of commits that rewrite a few hundred keys, with tombstones, over several segments."""
    logs = LogManager(root)
    rng = random.Random(7)
    config = dataclasses.replace(OFFSETS_TOPIC_CONFIG, segment_bytes=64 * 1024)
    for partition in (0, 3, 9):
        log = logs.get_or_create(OFFSETS_TOPIC, partition, config)
        for batch in range(300):
            records = []
            for _ in range(rng.randint(1, 20)):
                group, topic_partition = f"g{rng.randint(0, 9)}", rng.randint(0, 29)
                record = (offset_commit_tombstone(group, "t", topic_partition) if rng.random() < 0.05 else
                          offset_commit_record(group, "t", topic_partition, batch, -1, "", 1))
                records.append((record.key, record.value))
            log.append(build_keyed_batch(records, 1_700_000_000_000 + batch), keys_checked=True)
    logs.close()


def _read(root: Path) -> list[tuple[int, list[tuple[bytes, bytes | None]]]]:
    logs = LogManager(root)
    try:
        return [(p, [(r.key, r.value) for r in records]) for p, records in LogRecordStore(logs, 50).read_partitions()]
    finally:
        logs.close()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the parallel load needs two CPUs")
def test_parallel_load_reads_what_the_inline_load_reads_and_closes_what_it_opened(tmp_path, monkeypatch):
    _fill(tmp_path)
    inline = _read(tmp_path)
    assert [p for p, _ in inline] == [0, 3, 9] and all(records for _, records in inline)

    pools = []
    real_pool = log_record_store.forked_pool
    monkeypatch.setattr(log_record_store, "forked_pool", lambda workers: pools.append(workers) or real_pool(workers))
    monkeypatch.setattr(log_record_store, "PARALLEL_LOAD_MIN_BYTES", 0)
    fds = _open_fds()
    assert _read(tmp_path) == inline
    assert pools == [min(os.cpu_count() or 1, 3, log_record_store.MAX_LOAD_WORKERS)]  # 3 partitions
    assert _open_fds() == fds


def test_transactional_offsets_are_written_as_kafka_writes_them_and_load_resolved(tmp_path):
    """TxnOffsetCommit records go in a transactional batch of the producer, markers are control
    batches; reading back applies committed transactions where their records are, drops aborted
    ones and returns the open transaction's records as pending (Record.producer_id)."""
    import asyncio

    from coordinator.log.batch import iter_batches
    from coordinator.log.transactions import COMMIT, marker_of

    def commit(offset: int, pid: int = -1, partition: int = 0):
        return offset_commit_record("g", "t", partition, offset, -1, "", 1, producer_id=pid, producer_epoch=0)

    async def write() -> None:
        logs = LogManager(tmp_path)
        store = LogRecordStore(logs, 50)
        writes = [store.append(7, [commit(1)]),
                  store.append(7, [commit(10, pid=500), commit(11, pid=500, partition=1)]),
                  store.append(7, [commit(20, pid=501)]),
                  store.append_marker(7, 501, 0, False, 0),  # aborted: 20 never counts
                  store.append_marker(7, 500, 0, True, 0),   # committed: 10 and 11
                  store.append(7, [commit(30, pid=502, partition=1)])]  # still open at the restart
        await asyncio.gather(*writes)
        logs.close()

    asyncio.run(write())
    segment = next((tmp_path / f"{OFFSETS_TOPIC}-7").glob("*.log")).read_bytes()
    headers = [h for _, h in iter_batches(segment)]
    assert [(h.producer_id, h.is_transactional, h.is_control) for h in headers] == [
        (-1, False, False), (500, True, False), (501, True, False), (501, True, True), (500, True, True),
        (502, True, False)]
    assert marker_of(segment[_pos(segment, 4):], headers[4])[0] == COMMIT

    logs = LogManager(tmp_path)
    try:
        records = list(LogRecordStore(logs, 50).read_all(7))
    finally:
        logs.close()
    assert [(r.decoded.key.partition, r.decoded.value.offset, r.producer_id) for r in records] == [
        (0, 10, -1), (1, 11, -1), (1, 30, 502)]


def _pos(data: bytes, index: int) -> int:
    from coordinator.log.batch import iter_batches

    return [pos for pos, _ in iter_batches(data)][index]
