"""Share group benchmark (KIP-932): records delivered and acknowledged through a share group of three
members, and ShareFetch latency, against the real server.

    .venv/bin/python -m tests.bench.share_groups                    # 20,000 records, 2 partitions, 3 members
    .venv/bin/python -m tests.bench.share_groups --records 50000 --members 3 --max-records 500

The server runs as a subprocess (`groupcoord serve`, flush.policy=always) on a free 127.0.0.1 port. Each
member is a thread with its own connection that joins with ShareGroupHeartbeat, then sends raw
ShareFetch requests (v2, MaxRecords as given) for both partitions, acknowledging (ACCEPT) what the
previous fetch acquired in the next one, as the Java client's implicit mode does; every acknowledgement
is answered only once its ShareSnapshot is fsynced.
Reported: accepted records per second from the first fetch to the last acknowledgement, and the p50/p99
of ShareFetch round trips. Figures depend on the disk's fsync latency and the machine's load.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from protocol.api_keys import ApiKey
from protocol.messages import CreateTopicsRequest, ShareFetchRequest
from tests.bench.data_plane import machine, start_server
from tests.server.conftest import KafkaWire
from tests.server.test_share_wire import join

TOPIC = "bench-share"
GROUP = "bench-share-group"
ACCEPT = 1
Fetch = ShareFetchRequest


def produce(bootstrap: str, records: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 4})
    for i in range(records):
        producer.produce(TOPIC, value=b"x" * 100, partition=i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


class Member(threading.Thread):
    def __init__(self, host: str, port: int, name: str, topic_id: uuid.UUID, partitions: int, max_records: int,
                 accepted: list[int], target: int) -> None:
        super().__init__(name=name, daemon=True)
        self.wire = KafkaWire(host, port, client_id=name)
        self.topic_id, self.partitions, self.max_records = topic_id, partitions, max_records
        self.accepted, self.target = accepted, target
        self.epoch = 0
        self.latencies: list[float] = []
        self.pending: dict[int, list[tuple[int, int]]] = {}

    def fetch(self) -> Any:
        parts = [Fetch.FetchPartition(partition_index=p, acknowledgement_batches=[
            Fetch.AcknowledgementBatch(first, last, [ACCEPT]) for first, last in self.pending.get(p, [])])
            for p in range(self.partitions)]
        started = time.perf_counter()
        response = self.wire.request(ApiKey.SHARE_FETCH, 2, Fetch(
            group_id=GROUP, member_id=self.name, share_session_epoch=self.epoch, max_wait_ms=200, min_bytes=1,
            max_records=self.max_records, batch_size=self.max_records,
            topics=[Fetch.FetchTopic(self.topic_id, parts)], forgotten_topics_data=[]))
        self.latencies.append(time.perf_counter() - started)
        assert response.error_code == 0, response
        self.epoch += 1
        done = sum(last - first + 1 for ranges in self.pending.values() for first, last in ranges)
        self.accepted.append(done)
        self.pending = {}
        for topic in response.responses:
            for p in topic.partitions:
                assert p.acknowledge_error_code == 0, p
                if p.acquired_records:
                    self.pending[p.partition_index] = [(a.first_offset, a.last_offset) for a in p.acquired_records]
        return response

    def run(self) -> None:
        while sum(self.accepted) < self.target or self.pending:
            self.fetch()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--max-records", type=int, default=500, help="ShareFetch MaxRecords (default 500)")
    args = parser.parse_args(argv)
    command = " ".join([".venv/bin/python -m tests.bench.share_groups", *map(shlex.quote, argv or sys.argv[1:])])
    print(f"machine: {machine()}")
    print(f"reproduce: {command}")
    with tempfile.TemporaryDirectory(prefix="bench-share-") as tmp:
        srv = start_server(Path(tmp), args.partitions)
        try:
            srv.wait_ready()
            admin = KafkaWire(srv.host, srv.port, client_id="bench-admin")
            [created] = admin.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[
                CreateTopicsRequest.CreatableTopic(TOPIC, args.partitions, 1, [], [])])).topics
            accepted: list[int] = []
            members = [Member(srv.host, srv.port, f"member-{i}", created.topic_id, args.partitions,
                              args.max_records, accepted, args.records) for i in range(args.members)]
            for member in members:  # as clients do: join, and fetch once assigned (the join initializes)
                join(member.wire, GROUP, member.name, TOPIC)
            for member in members:
                member.fetch()  # opens the session; the share-partitions start at the end (latest)
            produce(srv.bootstrap, args.records, args.partitions)
            started = time.perf_counter()
            for member in members:
                member.start()
            for member in members:
                member.join(300)
            seconds = time.perf_counter() - started
        finally:
            code = srv.stop()
    latencies = sorted(t for m in members for t in m.latencies)
    p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
    total = sum(accepted)
    print(f"{args.members} members, {args.partitions} partitions, MaxRecords {args.max_records}, flush.policy=always")
    print(f"accepted: {total:,} records in {seconds:.2f} s = {total / seconds:,.0f} records/s; "
          f"ShareFetch: {len(latencies):,} requests, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    return 0 if code == 0 and total == args.records else 1


if __name__ == "__main__":
    sys.exit(main())
