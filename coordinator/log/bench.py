"""Micro-benchmark of the partition log: durable appends under group commit, then reads.

    .venv/bin/python -m coordinator.log.bench [--appenders 64] [--batches 20000] [--records 10]
                                             [--value-bytes 100] [--dir DIR]

Appends: ``appenders`` asyncio tasks each append a batch and await ``wait_durable`` (policy
``always``), so every batch is on disk before the next one from that task: the figure is
acknowledged, fsynced throughput, and ``fsyncs`` shows how many appends each fsync carried.
Reads: the whole log from offset 0 in 1 MiB fetches (raw bytes), then decoded to records.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from .batch import build_batch, iter_batches, iter_records
from .flush import GroupCommitFlusher
from .partition import LogConfig, Partition

MiB = 1 << 20


class CountingFsync:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        os.fsync(fd)


async def bench_appends(partition: Partition, appenders: int, batches: int, batch: bytes) -> dict[str, float]:
    fsync = CountingFsync()
    flusher = GroupCommitFlusher("always", fsync=fsync)
    per_task = batches // appenders

    async def appender() -> None:
        for _ in range(per_task):
            partition.append(batch)
            await flusher.wait_durable(partition)

    start = time.perf_counter()
    await asyncio.gather(*(appender() for _ in range(appenders)))
    elapsed = time.perf_counter() - start
    total = per_task * appenders
    return {"batches_per_s": total / elapsed, "mb_per_s": total * len(batch) / MiB / elapsed,
            "fsyncs": fsync.calls, "flush_rounds": flusher.fsync_rounds, "appends_per_round":
            total / max(flusher.fsync_rounds, 1), "seconds": elapsed}


def bench_reads(partition: Partition) -> dict[str, float]:
    offset, total = partition.log_start_offset, 0
    start = time.perf_counter()
    chunks = []
    while offset < partition.log_end_offset:
        chunk = partition.read(offset, MiB)
        chunks.append(chunk)
        total += len(chunk)
        last = None
        for _, h in iter_batches(chunk):
            last = h
        assert last is not None
        offset = last.last_offset + 1
    raw_elapsed = time.perf_counter() - start
    start = time.perf_counter()
    records = 0
    for chunk in chunks:
        for pos, _ in iter_batches(chunk):
            records += len(list(iter_records(chunk, pos)))
    decode_elapsed = time.perf_counter() - start
    return {"read_mb_per_s": total / MiB / raw_elapsed, "decode_mb_per_s": total / MiB / decode_elapsed,
            "records_per_s": records / decode_elapsed, "mb": total / MiB}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appenders", type=int, default=64)
    parser.add_argument("--batches", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=10, help="records per batch")
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary dir)")
    args = parser.parse_args(argv)
    batch = build_batch([(b"key-%d" % i, os.urandom(args.value_bytes)) for i in range(args.records)])
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        partition = Partition(Path(tmp) / "bench-0", LogConfig(segment_bytes=64 * MiB))
        a = asyncio.run(bench_appends(partition, args.appenders, args.batches, batch))
        print(f"append+fsync: {a['batches_per_s']:,.0f} batches/s, {a['mb_per_s']:.1f} MB/s "
              f"({args.appenders} appenders, {len(batch)}-byte batches of {args.records} records; "
              f"{a['fsyncs']} fsync calls in {a['flush_rounds']} rounds, "
              f"{a['appends_per_round']:.1f} appends per round, {a['seconds']:.2f} s)")
        r = bench_reads(partition)
        print(f"read: {r['read_mb_per_s']:,.0f} MB/s raw ({r['mb']:.1f} MB in 1 MiB fetches); "
              f"decode: {r['decode_mb_per_s']:.1f} MB/s, {r['records_per_s']:,.0f} records/s")
        partition.close()


if __name__ == "__main__":
    main()
