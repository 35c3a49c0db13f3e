"""Loop CPU per durable offset commit through the connection layer, in one process, no sockets.

    .venv/bin/python -m tests.bench.commit_connection                 # loop-thread CPU µs per commit
    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-after=functools_reduce \\
        --callgrind-out-file=conn.out .venv/bin/python -m tests.bench.commit_connection --rounds 10
    grep ^summary: conn.out.2                                         # Ir of the timed rounds alone

Eight `Connection`s (the server's own, over a transport that keeps what is written) are each fed
reads of `WINDOW` pipelined OffsetCommits of 100 partitions (simple groups, as `make bench-compare`
sends them), and a round ends once every answer is written: framing, dispatch, the commit, the
append, the flusher's round and the answers' way back to the connection, as the live server runs
them, without the client's CPU or the kernel's sockets. Instructions per commit = summary / (rounds
x 64); the timed rounds are bracketed by the run's only two `functools.reduce` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import tempfile
import time

from coordinator.logging import configure_logging
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import CreateTopicsRequest, OffsetCommitRequest
from tests.bench.heartbeat_path import open_connection, request
from tests.bench.in_process import start_server, stop_server

CONNECTIONS = 8
WINDOW = 8  # commits per read, as bench.compare's window
PARTITIONS = 100
# How often a round checks for its answers. `sleep(0)` spun the loop through the whole fsync, which put
# ~8% of the counted instructions (and the thread CPU) in the benchmark's own polling.
POLL_S = 0.0005


def _commit(group: str, correlation_id: int, offset: int) -> bytes:
    return encode_request(ApiKey.OFFSET_COMMIT, 8, correlation_id, "bench", OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="bench", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset)
                for p in range(PARTITIONS)])]))


async def measure(rounds: int, warmup: int = 5) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as data:
        server = await start_server([f"log.dirs={data}"])
        conns = [open_connection(server, 20_000 + i) for i in range(CONNECTIONS)]
        await request(*conns[0], ApiKey.CREATE_TOPICS, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name="bench", num_partitions=PARTITIONS, replication_factor=1)]))
        reads = [b"".join(_commit(f"commits-{i}", j, j) for j in range(WINDOW)) for i in range(CONNECTIONS)]

        async def run(n: int) -> None:
            for _ in range(n):
                for (conn, _), read in zip(conns, reads, strict=True):
                    conn.data_received(read)
                while any(conn.answers for conn, _ in conns):  # polled, not spun: the loop idles in the fsync
                    await asyncio.sleep(POLL_S)
                for _, transport in conns:
                    transport.written.clear()

        await run(warmup)
        functools.reduce(max, [1, 2])  # callgrind: dump (and reset) before the timed rounds
        cpu, wall = time.thread_time(), time.perf_counter()
        await run(rounds)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        functools.reduce(max, [1, 2])  # and after them
        await stop_server(server)
    commits = rounds * CONNECTIONS * WINDOW
    return {"commits": commits, "loop_cpu_us_per_commit": cpu / commits * 1e6,
            "commits_per_loop_cpu_s": commits / cpu, "wall_us_per_commit": wall / commits * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    configure_logging("WARNING")
    try:  # the server's loop (app.run: uvloop when installed)
        import uvloop

        figures = uvloop.run(measure(args.rounds))
    except ImportError:
        figures = asyncio.run(measure(args.rounds))
    with open("/proc/loadavg") as loadavg:
        load = loadavg.read().split()[0]
    print(f"{figures['commits']} commits: loop CPU {figures['loop_cpu_us_per_commit']:.1f} us/commit "
          f"({figures['commits_per_loop_cpu_s']:,.0f}/s of loop CPU), "
          f"wall {figures['wall_us_per_commit']:.1f} us/commit, load {load}")


if __name__ == "__main__":
    main()
