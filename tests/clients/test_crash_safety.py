"""Nothing acknowledged is lost or doubled when the server is SIGKILLed at random moments under load.

Three idempotent confluent-kafka producers (acks=-1) write to a 3-partition topic without pause while
the server is killed with SIGKILL 22 times at random moments and restarted on the same port. The
producers keep their clients across the kills: librdkafka reconnects and retries what it had in
flight, so the server must recognise a retried batch it wrote before the kill (its producer state is
rebuilt from the log on restart) instead of appending it twice.

After every restart a reader (CRC checks on) reads each partition up to its high watermark:
every message acknowledged before the read began is there exactly once, no message is there twice,
each producer's messages are in the order it sent them, and offsets run 0, 1, 2... At the end the
server stops cleanly and ``groupcoord log dump`` finds no bad batch in any segment.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter, defaultdict

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import server_command

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(420)]

KILLS = 22
PRODUCERS = 3
PARTITIONS = 3


class LoadProducer:
    """One idempotent producer sending ``<producer>:<n>`` for n = 0, 1, 2... until stopped."""

    def __init__(self, bootstrap: str, topic: str, index: int) -> None:
        self.topic, self.index = topic, index
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.sent = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": 300_000, "reconnect.backoff.max.ms": 500,
            "logger": logging.getLogger(f"librdkafka.producer{index}"),
        })
        self._thread = threading.Thread(target=self._run, name=f"load-producer-{index}", daemon=True)

    def _delivered(self, err, msg) -> None:
        with self._lock:
            if err is None:
                self.acked.append(int(msg.value().split(b":")[1]))
            else:
                self.errors.append(str(err))

    def _run(self) -> None:
        while not self._stop.is_set():  # about 1,000 messages a second: enough load, a quick read-back
            for _ in range(10):
                try:
                    self._producer.produce(self.topic, key=f"p{self.index}-{self.sent % 7}",
                                           value=f"{self.index}:{self.sent}", on_delivery=self._delivered)
                    self.sent += 1
                except BufferError:
                    break
            self._producer.poll(0)
            time.sleep(0.01)

    def start(self) -> None:
        self._thread.start()

    def acked_so_far(self) -> set[int]:
        with self._lock:
            return set(self.acked)

    def stop(self) -> int:
        """Stop sending; wait for every message in flight; returns how many were left undelivered."""
        self._stop.set()
        self._thread.join(10)
        return self._producer.flush(120)


def read_partitions(bootstrap: str, topic: str) -> dict[int, list[tuple[int, str]]]:
    """Every (offset, value) of each partition up to its high watermark at the time of the call."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "crash-check", "enable.auto.commit": False,
                         "check.crcs": True, "logger": logging.getLogger("librdkafka.reader")})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS) if ends[p]])
        rows: dict[int, list[tuple[int, str]]] = defaultdict(list)
        deadline = time.monotonic() + 60
        while any(len(rows[p]) < ends[p] for p in ends) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                assert msg.error() is None, f"reading back: {msg.error()}"
                if msg.offset() < ends[msg.partition()]:
                    rows[msg.partition()].append((msg.offset(), msg.value().decode()))
        assert all(len(rows[p]) == ends[p] for p in ends), ({p: len(rows[p]) for p in ends}, ends)
        return rows
    finally:
        consumer.close()


def check_log(rows: dict[int, list[tuple[int, str]]], acked: dict[int, set[int]]) -> int:
    """Asserts exactly-once and order; returns how many messages the log holds."""
    seen: Counter[tuple[int, int]] = Counter()
    for partition, messages in rows.items():
        assert [o for o, _ in messages] == list(range(len(messages))), f"partition {partition}: offsets have holes"
        last: dict[int, int] = {}
        for _, value in messages:
            producer, n = map(int, value.split(":"))
            seen[(producer, n)] += 1
            assert n > last.get(producer, -1), \
                f"partition {partition}: {producer}:{n} after {producer}:{last[producer]}"
            last[producer] = n
    doubled = [m for m, times in seen.items() if times > 1]
    assert not doubled, f"{len(doubled)} messages written twice, e.g. {doubled[:5]}"
    for producer, numbers in acked.items():
        missing = sorted(n for n in numbers if (producer, n) not in seen)
        assert not missing, f"producer {producer}: {len(missing)} acknowledged messages lost, e.g. {missing[:5]}"
    return sum(seen.values())


def test_acknowledged_messages_survive_22_sigkills_exactly_once_and_in_order(server_factory, topic_name):
    server = server_factory()
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka.admin")})
    admin.create_topics([NewTopic(topic_name, num_partitions=PARTITIONS, replication_factor=1)])[topic_name].result(20)
    producers = [LoadProducer(server.bootstrap, topic_name, i) for i in range(PRODUCERS)]
    for p in producers:
        p.start()
    rng = random.Random(os.environ.get("GC_TEST_SEED", "crash-safety"))
    progress: list[int] = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.5))  # producing meanwhile
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            server.stop()  # closes its log file; nothing is left to signal
            server.start()
            server.wait_ready()
            acked = {p.index: p.acked_so_far() for p in producers}
            held = check_log(read_partitions(server.bootstrap, topic_name), acked)
            progress.append(sum(map(len, acked.values())))
            assert held >= progress[-1]
    finally:
        undelivered = [p.stop() for p in producers]
    assert undelivered == [0] * PRODUCERS
    assert not [e for p in producers for e in p.errors], [p.errors[:3] for p in producers]
    final = {p.index: set(p.acked) for p in producers}
    # Idempotent producers: in the end every message sent was acknowledged, and the log holds each once.
    assert all(len(final[p.index]) == p.sent for p in producers)
    assert check_log(read_partitions(server.bootstrap, topic_name), final) == sum(p.sent for p in producers)
    # The load went on between the kills, not only before the first.
    assert sum(b > a for a, b in itertools.pairwise(progress)) >= KILLS // 2, progress

    assert server.stop() == 0
    dump = subprocess.run([*server_command(), "log", "dump", "--no-records", str(server.data_dir)],
                          capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0, dump.stdout[-2000:] + dump.stderr[-2000:]
    truncations = server.log_path.read_text().count("truncat")
    print(f"{KILLS} SIGKILLs: {sum(p.sent for p in producers)} messages acknowledged, each once; "
          f"acknowledged before each kill: {progress}; torn tails cut on restart: {truncations}")
