"""Durable offset commits and produced records through PostgreSQL vs the file store, and a cluster's failover time.

    .venv/bin/python -m tests.bench.cluster_store [--seconds 10] [--connections 8] [--kills 5]

- commits: CONNECTIONS clients each send OffsetCommit requests (10 partitions, a simple group of
  its own) one after the other for SECONDS, against one server on the file store (flush.policy=always:
  answered once fsynced) and one cluster node on a throwaway PostgreSQL (answered once the
  transaction committed, synchronous_commit on). Figures: requests/s and p50/p99 latency in ms.
- produce: CONNECTIONS clients each send Produce requests (acks=all, one batch of 10 records of 100
  bytes) to a partition of their own, one after the other, for SECONDS, against the same two servers
  (files: answered once fsynced; PostgreSQL: once the partition's transaction committed).
- failover: a three-node cluster (default lease 3 s, renewal 0.5 s); a client commits every 10 ms
  to its group's coordinator, which is SIGKILLed, KILLS times (restarted in between). Figure: seconds
  from the kill to the first commit acknowledged by the survivor taking over, median and max.

Both servers run as subprocesses on loopback ports (`make bench` runs this module).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from coordinator.cluster.local import ThrowawayPostgres, free_port, node_command
from coordinator.log.batch import build_batch
from protocol.api_keys import ApiKey
from protocol.client import decode_response, encode_request
from protocol.messages import OffsetCommitRequest, ProduceRequest
from tests.conftest import api_versions_round_trip

PARTITIONS = 10
PRODUCE_RECORDS = 10  # records of RECORD_VALUE per produced batch
RECORD_VALUE = b"v" * 100


def _commit_frame(group: str, offset: int, correlation_id: int) -> bytes:
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="bench", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset)
            for p in range(PARTITIONS)])])
    return encode_request(ApiKey.OFFSET_COMMIT, 8, correlation_id, "bench", request)


async def _client(port: int, request: Callable[[int], bytes], api_key: ApiKey, version: int,
                  codes: Callable[[Any], set[int]], until: float, latencies: list[float]) -> None:
    """One connection sending `request(n)` one after the other until `until`; the latency of each
    answered without error is counted."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = 0
    while time.monotonic() < until:
        n += 1
        started = time.perf_counter()
        writer.write(request(n))
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        _, response = decode_response(api_key, version, await reader.readexactly(size))
        if codes(response) == {0}:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            await asyncio.sleep(0.05)  # a shard or partition still loading: not counted
    writer.close()


def _measure(clients: list[Callable[[float, list[float]], Awaitable[None]]], seconds: float) -> dict[str, float]:
    latencies: list[float] = []

    async def run() -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(*(client(until, latencies) for client in clients))

    asyncio.run(run())
    latencies.sort()
    return {"per_s": len(latencies) / seconds,
            "p50_ms": latencies[len(latencies) // 2],
            "p99_ms": latencies[int(len(latencies) * 0.99)]}


def _create_topic(port: int, name: str, partitions: int) -> None:
    from tests.server.admin_wire import ensure_topic
    from tests.server.conftest import KafkaWire

    wire = KafkaWire("127.0.0.1", port)
    try:
        ensure_topic(wire, name, partitions)
    finally:
        wire.close()


def measure_commits(port: int, seconds: float, connections: int) -> dict[str, float]:
    _create_topic(port, "bench", PARTITIONS)  # offsets of topics that do not exist are refused

    def client(group: str) -> Callable[[float, list[float]], Awaitable[None]]:
        return functools.partial(_client, port, lambda n: _commit_frame(group, n, n), ApiKey.OFFSET_COMMIT, 8,
                                 lambda r: {p.error_code for t in r.topics for p in t.partitions})

    return _measure([client(f"bench-{port}-{i}") for i in range(connections)], seconds)


def _produce_frame(partition: int, correlation_id: int) -> bytes:
    batch = build_batch([(b"key", RECORD_VALUE)] * PRODUCE_RECORDS)
    request = ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[ProduceRequest.TopicProduceData(
        name="bench-produce", partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
    return encode_request(ApiKey.PRODUCE, 9, correlation_id, "bench", request)


def measure_produce(port: int, seconds: float, connections: int) -> dict[str, float]:
    """Produce acks=all, each connection to a partition of its own; figures per request (batch)."""
    _create_topic(port, "bench-produce", connections)

    def client(partition: int) -> Callable[[float, list[float]], Awaitable[None]]:
        return functools.partial(_client, port, lambda n: _produce_frame(partition, n), ApiKey.PRODUCE, 9,
                                 lambda r: {p.error_code for t in r.responses for p in t.partition_responses})

    _measure([client(p) for p in range(connections)], 2.0)  # until every partition is led and loaded
    return _measure([client(p) for p in range(connections)], seconds)


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _ready(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            api_versions_round_trip("127.0.0.1", port)
            return
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _create_topics(port: int) -> None:
    """The topics the commits name (a commit for a topic that does not exist is refused, as Kafka refuses
    it): `bench` for the commit rate, `t` for the failover client (tests/cluster/wire.py)."""
    from tests.server.admin_wire import create_topic
    from tests.server.conftest import KafkaWire

    wire = KafkaWire("127.0.0.1", port)
    try:
        create_topic(wire, "bench", PARTITIONS)
        create_topic(wire, "t")
    finally:
        wire.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_balanced(url: str, nodes: int, timeout: float = 60) -> None:
    from coordinator.cluster.commands import cluster_status

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = asyncio.run(cluster_status(url))
        if status["unowned"] == 0 and sum(1 for n in status["nodes"] if n["live"] and n["shards"]) == nodes:
            return
        time.sleep(0.5)
    raise TimeoutError("cluster not balanced")


def _owner(url: str, group: str) -> int:
    from coordinator.cluster.commands import cluster_status
    from coordinator.cluster.store import offsets_shard
    from coordinator.records import partition_for

    shard = offsets_shard(partition_for(group, 50))
    while True:
        for lease in asyncio.run(cluster_status(url))["leases"]:
            if lease["shard"] == shard and lease["live"] and lease["owner"] is not None:
                return int(lease["owner"])
        time.sleep(0.05)


def measure_failover(postgres: ThrowawayPostgres, root: Path, kills: int) -> list[float]:
    from tests.cluster.wire import WireCommitter

    url = postgres.create_database("failover")
    subprocess.run([sys.executable, "-m", "coordinator", "db", "init", "--store-url", url], check=True,
                   capture_output=True)
    ports = {i: free_port() for i in (1, 2, 3)}
    argv = {i: node_command(i, ports[i], url, root / f"node-{i}") for i in ports}
    procs = {i: _start(argv[i], root / f"node-{i}.log") for i in ports}
    times: list[float] = []
    try:
        for port in ports.values():
            _ready(port)
        _create_topics(ports[1])  # the other nodes learn them through the database
        _wait_balanced(url, 3)
        for kill in range(kills):
            group = f"failover-{kill}"
            committer = WireCommitter([("127.0.0.1", ports[i]) for i in (1, 2, 3)], group)
            thread = threading.Thread(target=committer.run, daemon=True)
            thread.start()
            deadline = time.monotonic() + 60
            while not committer.acknowledged:  # bounded: a bench run must end, with a reason
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no commit acknowledged (errors {committer.errors[-5:]})")
                time.sleep(0.01)
            victim = _owner(url, group)
            killed_at = time.monotonic()
            procs[victim].kill()
            procs[victim].wait()
            while not any(t > killed_at for t, _ in committer.acknowledged):
                if time.monotonic() > killed_at + 60:
                    raise TimeoutError(f"no commit acknowledged after the kill (errors {committer.errors[-5:]})")
                time.sleep(0.01)
            times.append(next(t for t, _ in committer.acknowledged if t > killed_at) - killed_at)
            committer.stop = True
            thread.join(10)
            procs[victim] = _start(argv[victim], root / f"node-{victim}.log")
            _ready(ports[victim])
            _wait_balanced(url, 3)
    finally:
        for proc in procs.values():
            _stop(proc)
    return times


def _table(unit: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"{'store':<12} {unit:>10} {'p50 ms':>8} {'p99 ms':>8}")
    for name, figures in rows.items():
        print(f"{name:<12} {figures['per_s']:>10.0f} {figures['p50_ms']:>8.2f} {figures['p99_ms']:>8.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.cluster_store", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args(argv)
    postgres = ThrowawayPostgres().start()
    root = Path(tempfile.mkdtemp(prefix="groupcoord-bench-cluster-"))
    try:
        file_port = free_port()
        file_server = _start([sys.executable, "-m", "coordinator", "serve", "--override",
                              f"listeners=PLAINTEXT://127.0.0.1:{file_port}", "--override",
                              f"log.dirs={root / 'file'}"], root / "file.log")
        try:
            _ready(file_port)
            _create_topics(file_port)
            files = measure_commits(file_port, args.seconds, args.connections)
            files_produce = measure_produce(file_port, args.seconds, args.connections)
        finally:
            _stop(file_server)
        url = postgres.create_database("commits")
        subprocess.run([sys.executable, "-m", "coordinator", "db", "init", "--store-url", url], check=True,
                       capture_output=True)
        node_port = free_port()
        node = _start(node_command(1, node_port, url, root / "pg"), root / "pg.log")
        try:
            _ready(node_port)
            _create_topics(node_port)
            _wait_balanced(url, 1)
            pg = measure_commits(node_port, args.seconds, args.connections)
            pg_produce = measure_produce(node_port, args.seconds, args.connections)
        finally:
            _stop(node)
        print(f"durable commits ({args.connections} connections, {PARTITIONS} partitions each, {args.seconds:.0f} s)")
        _table("commits/s", {"files": files, "postgresql": pg})
        print(f"produce acks=all ({args.connections} connections, a partition each, batches of {PRODUCE_RECORDS} "
              f"records of {len(RECORD_VALUE)} bytes, {args.seconds:.0f} s)")
        _table("batches/s", {"files": files_produce, "postgresql": pg_produce})
        if args.kills:
            times = measure_failover(postgres, root, args.kills)
            print(f"failover (SIGKILL of the group's coordinator, {len(times)} kills): median "
                  f"{statistics.median(times):.2f} s, max {max(times):.2f} s "
                  f"({', '.join(f'{t:.2f}' for t in times)})")
    finally:
        postgres.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
