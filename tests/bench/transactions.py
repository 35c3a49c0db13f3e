"""Transactions benchmark: committed transactions per second, and read_committed fetch against read_uncommitted.

    .venv/bin/python -m tests.bench.transactions                   # 10 s of transactions
    .venv/bin/python -m tests.bench.transactions --seconds 5 --records 10

The server runs as a subprocess (`groupcoord serve`, flush.policy=always) on a free 127.0.0.1 port
in a temporary data dir and is always stopped at the end. Phases:

- transactions: one confluent-kafka transactional producer, for `--seconds`, runs transactions of
  `--records` records (100 B) spread over 2 partitions plus send_offsets_to_transaction for one group
  partition, then commit: each is InitProducerId-free AddPartitionsToTxn + Produce + AddOffsetsToTxn +
  TxnOffsetCommit + EndTxn, and the markers; committed transactions per second;
- fetch: a consumer with both partitions assigned reads everything back, once with
  isolation.level=read_uncommitted and once read_committed (LSO bound, aborted list, markers
  skipped by the client); seconds and records/s of each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import ServerProcess, local_server

TOPIC = "bench-transactions"


def start_server(workdir: Path) -> ServerProcess:
    return local_server(workdir, "flush.policy=always").start()


def transactions(bootstrap: str, seconds: float, records: int) -> tuple[int, float]:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-tx", "linger.ms": 1})
    producer.init_transactions(30)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-g"})
    group = metadata.consumer_group_metadata()
    value = b"x" * 100
    done = 0
    started = time.perf_counter()
    offset = 0
    while time.perf_counter() - started < seconds:
        producer.begin_transaction()
        for i in range(records):
            producer.produce(TOPIC, value=value, partition=i % 2)
        offset += records
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, offset)], group, 30)
        producer.commit_transaction(30)
        done += 1
    elapsed = time.perf_counter() - started
    metadata.close()
    return done, elapsed


def fetch_all(bootstrap: str, isolation: str, expected: int) -> float:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-read-{isolation}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    got = 0
    started = time.perf_counter()
    while got < expected and time.perf_counter() - started < 120:
        got += sum(1 for m in consumer.consume(num_messages=10_000, timeout=0.5) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--records", type=int, default=10)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-txn-") as tmp:
        srv = start_server(Path(tmp))
        try:
            srv.wait_ready()
            admin = AdminClient({"bootstrap.servers": srv.bootstrap, "log_level": 4})
            admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(20)
            done, elapsed = transactions(srv.bootstrap, args.seconds, args.records)
            print(f"transactions: {done} committed in {elapsed:.1f} s = {done / elapsed:.0f}/s "
                  f"({args.records} records over 2 partitions + offsets each)")
            total = done * args.records
            for isolation in ("read_uncommitted", "read_committed"):
                took = fetch_all(srv.bootstrap, isolation, total)
                print(f"fetch {isolation}: {total} records in {took:.2f} s = {total / took:.0f} records/s")
        finally:
            srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
