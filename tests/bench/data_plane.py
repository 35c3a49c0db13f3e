"""Data-plane benchmark: durable produce, fetch and group-commit fsyncs of the real server.

    .venv/bin/python -m tests.bench.data_plane                       # ~100k x 1 KB, at most 10 s of producing
    .venv/bin/python -m tests.bench.data_plane --messages 20000 --seconds 5 --partitions 4 --producers 4

The server runs as a subprocess (`groupcoord serve`, as the tests start it) on a free 127.0.0.1
port, with `flush.policy=always` (an append is acknowledged only once fsynced) in a temporary
data dir, and is always stopped at the end. Phases:

- produce: one confluent-kafka (librdkafka) producer, acks=all, linger.ms=5, 1 KB random values,
  until `--messages` are delivered or `--seconds` have passed; msgs/s and MB/s of acknowledged data;
- fetch: a confluent-kafka consumer with the partitions assigned (no group, nothing committed)
  reads everything back from offset 0; MB/s of values received;
- fsync: the server's `log_flush_stats` event, logged when its flusher closes at shutdown, gives
  flush rounds, files fsynced and durable waits (one per appended batch set of a partition). Only the
  produce phase appends, so rounds / produce seconds is fsyncs per second during it, and waits /
  rounds is how many appends one fsync carried.

Figures depend on the disk's fsync latency and on what else the machine runs; compare runs made on
the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import ServerProcess, local_server

MB = 1 << 20
TOPIC = "bench-data-plane"


@dataclass
class ProduceResult:
    delivered: int
    failed: int
    seconds: float
    value_bytes: int


@dataclass
class FetchResult:
    received: int
    bytes: int
    seconds: float


def start_server(workdir: Path, partitions: int) -> ServerProcess:
    return local_server(workdir, "flush.policy=always", f"num.partitions={partitions}").start()


def create_topic(bootstrap: str, partitions: int) -> None:
    # log_level 4: librdkafka's notice at exit about the admin's unserved background events is noise here.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    futures = admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=1)],
                                  operation_timeout=10, request_timeout=15)
    futures[TOPIC].result(timeout=20)


def produce(bootstrap: str, messages: int, seconds: float, value_size: int, producers: int) -> ProduceResult:
    config = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "batch.size": 1 * MB,  # librdkafka's default is 1,000,000: ~950 records of 1 KB per batch at most
        "compression.type": "none",
        "queue.buffering.max.kbytes": 64 * 1024,
        "message.timeout.ms": 60_000,
    }
    # Each producer has its own connection; the server answers one request at a time per connection,
    # so concurrent appends (what group commit shares fsyncs between) need more than one producer.
    clients = [Producer(config) for _ in range(producers)]
    value = os.urandom(value_size)  # one random value: incompressible, and no per-message cost to make it
    counts = {"ok": 0, "failed": 0}

    def delivered(err: KafkaError | None, _msg: object) -> None:
        counts["failed" if err is not None else "ok"] += 1

    start = time.perf_counter()
    deadline = start + seconds
    sent = 0
    while sent < messages and time.perf_counter() < deadline:
        producer = clients[sent % producers]
        try:
            producer.produce(TOPIC, value=value, on_delivery=delivered)
            sent += 1
        except BufferError:  # local queue full: let deliveries drain it
            producer.poll(0.005)
            continue
        if sent % 1000 < producers:
            producer.poll(0)
    left = sum(producer.flush(60) for producer in clients)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"{left} messages still undelivered after flush")
    return ProduceResult(counts["ok"], counts["failed"], elapsed, value_size)


def fetch(bootstrap: str, partitions: int, expected: int, timeout_s: float = 60) -> FetchResult:
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "bench-data-plane-fetch",  # required by the client; assign() never joins it
        "enable.auto.commit": False,
        "fetch.max.bytes": 50 * MB,
        "max.partition.fetch.bytes": 8 * MB,
    })
    received = size = 0
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
        start = time.perf_counter()
        deadline = start + timeout_s
        while received < expected and time.perf_counter() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error() is not None:
                    raise KafkaException(msg.error())
                received += 1
                size += len(msg.value())
        elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    if received < expected:
        raise RuntimeError(f"fetched {received} of {expected} messages in {timeout_s:.0f} s")
    return FetchResult(received, size, elapsed)


def flush_stats(log_path: Path) -> dict[str, float] | None:
    """The server's `log_flush_stats` event (JSON log lines: stdout is not a terminal)."""
    for line in reversed(log_path.read_text(errors="replace").splitlines()):
        if '"log_flush_stats"' in line:
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.python_implementation()} {platform.python_version()}, {platform.system()} {platform.release()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="messages to produce (default 100000)")
    parser.add_argument("--seconds", type=float, default=10.0, help="stop producing after this long (default 10)")
    parser.add_argument("--value-bytes", type=int, default=1024, help="message value size (default 1024)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    parser.add_argument("--producers", type=int, default=1,
                        help="producer clients, each on its own connection (default 1)")
    parser.add_argument("--dir", type=Path, default=None, help="where the data dir goes (default: a temporary dir)")
    args = parser.parse_args(argv)

    command = " ".join([".venv/bin/python -m tests.bench.data_plane", *map(shlex.quote, argv or sys.argv[1:])])
    print(f"machine: {machine()}")
    print(f"reproduce: {command}")
    with tempfile.TemporaryDirectory(prefix="bench-data-plane-", dir=args.dir) as tmp:
        srv = start_server(Path(tmp), args.partitions)
        try:
            srv.wait_ready()
            print(f"server: {srv.bootstrap}, flush.policy=always, data in {srv.data_dir}\n")
            create_topic(srv.bootstrap, args.partitions)
            p = produce(srv.bootstrap, args.messages, args.seconds, args.value_bytes, args.producers)
            f = fetch(srv.bootstrap, args.partitions, p.delivered)
        finally:
            code = srv.stop()
        stats = flush_stats(srv.log_path)
        if code != 0 or stats is None:
            print(f"server exited with {code}; log_flush_stats {'found' if stats else 'missing'}\n"
                  f"--- server log tail ---\n{srv.log_tail()}", file=sys.stderr)
            return 1

    mb = p.delivered * p.value_bytes / MB
    rows = [
        ("produce", f"{p.delivered:,} msgs ({p.failed} failed)", f"{p.delivered / p.seconds:,.0f} msgs/s",
         f"{mb / p.seconds:,.1f} MB/s", f"{p.seconds:.2f} s"),
        ("fetch", f"{f.received:,} msgs", f"{f.received / f.seconds:,.0f} msgs/s",
         f"{f.bytes / MB / f.seconds:,.1f} MB/s", f"{f.seconds:.2f} s"),
        ("fsync (produce)", f"{stats['fsync_rounds']:,} rounds ({stats['fsync_calls']:,} files), "
         f"{stats['durable_waits']:,} appends", f"{stats['fsync_rounds'] / p.seconds:,.0f} fsyncs/s",
         f"{stats['durable_waits'] / max(stats['fsync_rounds'], 1):.2f} appends/fsync", f"{p.seconds:.2f} s"),
    ]
    print(f"{args.value_bytes}-byte values, {args.partitions} partition(s), {args.producers} producer(s), acks=all, "
          f"linger.ms=5; producer and consumer: confluent-kafka {_client_version()}")
    header = ("phase", "count", "rate", "throughput", "time")
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _client_version() -> str:
    import confluent_kafka

    return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"


if __name__ == "__main__":
    sys.exit(main())
