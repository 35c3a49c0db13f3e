"""CPU per durable offset commit, and the replay of `__consumer_offsets` on start, in one process.

    .venv/bin/python -m tests.bench.commit_path                   # both, default sizes
    .venv/bin/python -m tests.bench.commit_path --records 1000000 # the 1M-record restart
    .venv/bin/python -m tests.bench.commit_path --profile commit  # cProfile of one part, top 30

    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-after=functools_reduce --callgrind-out-file=commit.out \\
        .venv/bin/python -m tests.bench.commit_path --callgrind 1000
    grep ^summary: commit.out.2                                   # Ir of the 1,000 commits alone

Socket-free, so the figures are the server's own CPU (the loop thread's `thread_time`), which a
machine shared with other work disturbs far less than wall-clock throughput:

- commit: OffsetCommit frames of 100 partitions (simple groups, as `make bench-compare` sends
  them) go through `dispatch` exactly as a connection hands them over; every `WINDOW` requests the
  loop waits for their shared fsync. Figure: loop-thread CPU µs per request, and what that CPU alone
  would allow in requests/s. Under callgrind (`--callgrind N`: N requests, no replay part) the
  timed loop is bracketed by the run's only two `functools.reduce` calls; a dump resets the
  counters, so the dump after the second (`commit.out.2`) holds the loop alone (fsync threads
  included): instructions per request = its summary / N, the same from run to run on a shared machine.
- replay: a log of `--records` commit records (1,000 groups of 100 partitions, as the restart of
  `make bench-compare` fills it) is loaded by a fresh server, the way it starts: seconds until the
  first OffsetFetch could be answered (process start and imports not included).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.logging import configure_logging
from coordinator.server.app import Server
from coordinator.server.dispatch import dispatch
from protocol import accel
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import OffsetCommitRequest
from tests.bench.in_process import start_server, stop_server

PARTITIONS = 100
WINDOW = 64  # requests whose fsync is shared, as pipelined connections do on a busy server


class FakeClient:
    peer = "127.0.0.1:1"
    client_host = "127.0.0.1"
    client_id: str | None = None
    principal = "User:ANONYMOUS"

    class listener:
        name = "PLAINTEXT"


def commit_frame(group: str, offset: int, version: int = 9) -> bytes:
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="bench", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset)
            for p in range(PARTITIONS)])])
    return encode_request(ApiKey.OFFSET_COMMIT, version, 1, "bench", request)[4:]  # dispatch takes no size prefix


SERVER_GC = True  # collect garbage as the server process does (app.serve with tune_gc); --default-gc: off


async def _server(data: Path) -> Server:
    server = await start_server([f"log.dirs={data}", "listeners=PLAINTEXT://127.0.0.1:0"], tune_gc=SERVER_GC)
    if "bench" not in server.broker.topics:  # commits to topics that do not exist are refused, as by Kafka
        server.broker.topics.create("bench", PARTITIONS)
    return server


_close = stop_server


def _callgrind_mark() -> None:
    """A call callgrind's --zero-before / --dump-after can key on (see the module docstring)."""
    functools.reduce(lambda _, n: n, [0], None)


async def commits(data: Path, requests: int, groups: int, callgrind: bool = False) -> dict[str, float]:
    server = await _server(data)
    client = FakeClient()
    frames = [commit_frame(f"restart-{n % groups}", n) for n in range(min(requests, 4096))]
    cpu = 0.0
    if callgrind:
        _callgrind_mark()
    started = time.perf_counter()
    for chunk in range(0, requests, WINDOW):
        before = time.thread_time()
        pending = [dispatch(server.broker, frames[n % len(frames)], client)
                   for n in range(chunk, min(requests, chunk + WINDOW))]
        replies = [asyncio.ensure_future(p) for p in pending if not isinstance(p, bytes)]
        cpu += time.thread_time() - before
        before = time.thread_time()
        await asyncio.gather(*replies)
        cpu += time.thread_time() - before
    wall = time.perf_counter() - started
    if callgrind:
        _callgrind_mark()
    await _close(server)
    per_request_us = cpu / requests * 1e6
    return {"commit_cpu_us_per_request": round(per_request_us, 1),
            "commit_cpu_bound_requests_per_s": round(1e6 / per_request_us),
            "commit_wall_requests_per_s": round(requests / wall)}


async def replay(data: Path) -> dict[str, float]:
    started = time.perf_counter()
    server = await _server(data)
    loaded = time.perf_counter() - started
    records = server.broker.groups.offset_count()
    await _close(server)
    return {"replay_s": round(loaded, 3), "offsets_loaded": records}


def main() -> int:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="commit requests timed")
    parser.add_argument("--records", type=int, default=300_000, help="records the replay loads")
    parser.add_argument("--profile", choices=["commit", "replay"], help="cProfile one part instead")
    parser.add_argument("--default-gc", action="store_true", help="Python's default collector settings")
    parser.add_argument("--callgrind", type=int, default=0, metavar="N", help="run N commits for callgrind")
    args = parser.parse_args()
    if args.callgrind:
        args.requests, args.records = args.callgrind, 0
    global SERVER_GC
    SERVER_GC = not args.default_gc
    with tempfile.TemporaryDirectory(prefix="bench-commit-path-") as tmp:
        data = Path(tmp)
        profile = cProfile.Profile() if args.profile else None
        if profile and args.profile == "commit":
            profile.enable()
        figures: dict[str, Any] = {}
        if args.requests:  # as `make bench-compare` commits: one group per connection, 8 connections
            figures.update(asyncio.run(commits(data / "commit", args.requests, groups=8,
                                               callgrind=bool(args.callgrind))))
        if profile and args.profile == "commit":
            profile.disable()
        if args.records:  # as its restart fills the log: 1,000 groups, every partition committed many times
            asyncio.run(commits(data / "replay", args.records // PARTITIONS, groups=1000))
            if profile and args.profile == "replay":
                profile.enable()
            figures.update(asyncio.run(replay(data / "replay")))
        if profile:
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        figures["accelerator"] = accel.status()  # GROUPCOORD_PURE_PYTHON=1: the pure-Python build
        print(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
