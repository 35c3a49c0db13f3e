"""Memory with 100,000 groups, and the time to load them again on start.

    .venv/bin/python -m tests.bench.many_groups                  # 100,000 groups
    .venv/bin/python -m tests.bench.many_groups --groups 20000

The real server runs as a subprocess on a free 127.0.0.1 port in a temporary data dir (default
settings: flush.policy=always). Each group gets one committed offset (a simple-consumer commit,
as a tool or a one-off job leaves behind), pipelined over 16 connections; a tenth of them also get
a classic member that joins and syncs (measured right after, well within its session timeout).
The server's resident memory (VmRSS) is read before and after, and again after a restart, with
the time the restart took to replay the log and serve.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from bench.compare.groups import join_and_sync
from bench.compare.wire import Wire
from bench.compare.workloads import ensure_topic
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import OffsetCommitRequest
from tests.conftest import local_server

CONNECTIONS = 16
WINDOW = 64  # requests in flight per connection


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _commit_frame(group: str, correlation_id: int) -> bytes:
    return encode_request(ApiKey.OFFSET_COMMIT, 8, correlation_id, "bench", OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="bench", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=42)])]))


async def commit_everywhere(port: int, groups: int) -> float:
    wires = [await Wire.connect("127.0.0.1", port) for _ in range(CONNECTIONS)]
    started = time.perf_counter()

    async def one_connection(wire: Wire, names: list[str]) -> None:
        for start in range(0, len(names), WINDOW):
            batch = names[start:start + WINDOW]
            wire.writer.write(b"".join(_commit_frame(g, i) for i, g in enumerate(batch)))
            for _ in batch:
                await wire.read_frame()

    names = [f"group-{i:06d}" for i in range(groups)]
    await asyncio.gather(*(one_connection(w, names[i::CONNECTIONS]) for i, w in enumerate(wires)))
    elapsed = time.perf_counter() - started
    for w in wires:
        await w.close()
    return elapsed


async def members_in(port: int, groups: int) -> list[Wire]:
    """One classic member in each of the first ``groups`` groups, left joined (their wires stay open)."""
    wires = [await Wire.connect("127.0.0.1", port) for _ in range(groups)]
    for start in range(0, groups, 500):
        await asyncio.gather(*(join_and_sync(wires[i], f"group-{i:06d}")
                               for i in range(start, min(groups, start + 500))))
    return wires


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-many-groups-") as tmp:
        work = Path(tmp)
        server = local_server(work, "log.level=WARNING", "group.initial.rebalance.delay.ms=0").start()
        port = server.port
        try:
            server.wait_ready()
            asyncio.run(ensure_topic(port, partitions=1))  # commits to topics that do not exist are refused
            baseline = rss_mb(server.proc.pid)
            seconds = asyncio.run(commit_everywhere(port, args.groups))
            with_offsets = rss_mb(server.proc.pid)

            async def with_members() -> float:
                wires = await members_in(port, args.groups // 10)
                measured = rss_mb(server.proc.pid)
                for w in wires:
                    await w.close()
                return measured

            with_members_mb = asyncio.run(with_members())
            assert server.stop() == 0
            started = time.perf_counter()
            server.start()
            server.wait_ready(timeout=600)
            restart_s = time.perf_counter() - started
            after_restart = rss_mb(server.proc.pid)
        finally:
            server.stop()
    per_1k = (with_offsets - baseline) / (args.groups / 1000)
    print(f"{args.groups:,} groups with one committed offset each: {seconds:.1f}s to commit "
          f"({args.groups / seconds:,.0f} commits/s over {CONNECTIONS} connections, flush.policy=always)")
    print(f"server RSS: {baseline:.0f} MB empty, {with_offsets:.0f} MB with the groups ({per_1k:.2f} MB per 1,000), "
          f"{with_members_mb:.0f} MB with a member in {args.groups // 10:,} of them")
    print(f"restart: ready in {restart_s:.1f}s, {after_restart:.0f} MB after replaying the log")
    print(f"reproduce: .venv/bin/python -m tests.bench.many_groups --groups {args.groups}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
