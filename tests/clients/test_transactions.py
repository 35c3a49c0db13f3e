"""Exactly-once with real clients: confluent-kafka (librdkafka), kafka-python, aiokafka and kafkajs
run transaction version 1; the Java client reads the finalized transaction.version 2 and runs
KIP-890 part 2 (implicit partition adds, EndTxn v5 epoch bump).

A consume-transform-produce pipeline of two worker processes survives the SIGKILL of one worker
and its restart with the same transactional id; the older of two producers with one transactional
id is fenced; a hung transaction is aborted after its timeout and the LSO moves on.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import free_port

from .test_metrics import http_get, sample

pytestmark = [pytest.mark.clients, pytest.mark.timeout(240)]

REPO_ROOT = Path(__file__).resolve().parents[2]
INPUTS = 3000
PARTITIONS = 3


def create_topics(bootstrap: str, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names]).values():
        future.result(timeout=20)


def read_committed(bootstrap: str, topic: str, expected: int, timeout_s: float) -> list[bytes]:
    """Every record a read_committed consumer gets from `topic` (assigned, from the start), until
    `expected` arrived and nothing more came for a second, or `timeout_s`."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=0.2):
                if message.error() is None:
                    values.append(message.value())
                    quiet_since = time.monotonic()
            if len(values) >= expected and time.monotonic() - quiet_since > 1.0:
                break
    finally:
        consumer.close()
    return values


def watermarks(bootstrap: str, topic: str, isolation: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks", "isolation.level": isolation})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    finally:
        consumer.close()


def committed_total(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        return sum(max(tp.offset, 0) for tp in committed)
    finally:
        consumer.close()


def produce_inputs(bootstrap: str, source: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(INPUTS):
        producer.produce(source, key=str(i).encode(), value=str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def assert_exactly_once(bootstrap: str, source: str, sink: str, group: str) -> None:
    """The read_committed output holds every input ("<partition>:<offset>") once; offsets at the end."""
    outputs = read_committed(bootstrap, sink, INPUTS, 60)
    expected = sorted(f"{i % PARTITIONS}:{i // PARTITIONS}".encode() for i in range(INPUTS))
    assert len(outputs) - len(set(outputs)) == 0, "duplicates in the read_committed output"
    assert sorted(outputs) == expected
    assert committed_total(bootstrap, group, source) == INPUTS


def start_worker(bootstrap: str, group: str, transactional_id: str, source: str, sink: str,
                 log_dir: Path, module: str = "tests.clients.eos_worker") -> subprocess.Popen:
    """A worker process: a Python module, "js" for the kafkajs worker (tests/clients/js/eos_worker.js) or
    "java" for the Java client's (tests/clients/java: groupcoord.clients.EosWorker)."""
    if module == "js":
        from .support import JS_DIR, require_tool
        argv, cwd = [require_tool("node"), "eos_worker.js", bootstrap.rsplit(":", 1)[1]], JS_DIR
    elif module == "java":
        from .java_processes import quick_java_command
        argv, cwd = [*quick_java_command("groupcoord.clients.EosWorker"), bootstrap], REPO_ROOT
    else:
        argv, cwd = [sys.executable, "-m", module, bootstrap], REPO_ROOT
    # The child keeps its own copy of the log's descriptor; ours is closed once it has started.
    with open(log_dir / f"{transactional_id}-{time.monotonic_ns()}.log", "wb") as log:
        return subprocess.Popen([*argv, group, transactional_id, source, sink], cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


def stop(worker: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, sig)
    worker.wait(timeout=20)


@pytest.mark.parametrize("worker", ["tests.clients.eos_worker", "tests.clients.eos_worker_kafka_python",
                                    "tests.clients.eos_worker_aiokafka", "js", "java"],
                         ids=["confluent_kafka", "kafka_python", "aiokafka", "kafkajs", "java"])
def test_pipeline_is_exactly_once_across_a_killed_and_restarted_worker(server_factory, topic_name, tmp_path, worker):
    http_port = free_port()
    bootstrap = server_factory(f"http.listener=127.0.0.1:{http_port}").bootstrap
    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"{topic_name}-g"
    create_topics(bootstrap, source, sink)
    produce_inputs(bootstrap, source)

    workers = [start_worker(bootstrap, group, f"{topic_name}-eos-{n}", source, sink, tmp_path, worker)
               for n in (0, 1)]
    try:
        deadline = time.monotonic() + 120
        while committed_total(bootstrap, group, source) < INPUTS // 3:
            assert time.monotonic() < deadline, "the pipeline made no progress"
            assert all(w.poll() is None for w in workers), "a worker died"
            time.sleep(0.2)
        stop(workers[0], signal.SIGKILL)  # most likely inside a transaction
        workers[0] = start_worker(bootstrap, group, f"{topic_name}-eos-0", source, sink, tmp_path, worker)
        while committed_total(bootstrap, group, source) < INPUTS:
            assert time.monotonic() < deadline, (
                f"committed {committed_total(bootstrap, group, source)} of {INPUTS}")
            assert all(w.poll() is None for w in workers), "a worker died"
            time.sleep(0.2)
    finally:
        for process in workers:
            stop(process)

    assert_exactly_once(bootstrap, source, sink, group)
    assert_transaction_version(http_port, 2 if worker == "java" else 1)


def requests_by_version(http_port: int, api: str) -> dict[int, float]:
    """How many requests of `api` the server handled, by request version (its request metrics)."""
    _, page = http_get(http_port, "/metrics")
    return {version: count for version in range(16)
            if (count := sample(page, "kafka_network_request_metrics_requests_total", request=api,
                                version=str(version)))}


def assert_transaction_version(http_port: int, transaction_version: int) -> None:
    """The Java client reads the finalized transaction.version 2 from ApiVersions and runs KIP-890
    part 2: Produce v12 and TxnOffsetCommit v5 add partitions implicitly (no AddPartitionsToTxn nor
    AddOffsetsToTxn) and EndTxn v5 bumps the epoch. The other clients stay on version 1."""
    end_txn, produce = requests_by_version(http_port, "EndTxn"), requests_by_version(http_port, "Produce")
    added = requests_by_version(http_port, "AddPartitionsToTxn")
    offsets_added = requests_by_version(http_port, "AddOffsetsToTxn")
    commits = requests_by_version(http_port, "TxnOffsetCommit")
    if transaction_version == 2:
        assert set(end_txn) == {5} and set(commits) == {5}, (end_txn, commits)
        assert 12 in produce and not added and not offsets_added, (produce, added, offsets_added)
    else:
        assert end_txn and max(end_txn) < 5 and added and offsets_added, (end_txn, added, offsets_added)
        assert max(commits) < 5 and max(produce) < 12, (commits, produce)


KILLS = 20


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_pipeline_stays_exactly_once_across_sigkills_of_the_server(server_factory, topic_name, tmp_path):
    server = server_factory()
    bootstrap = server.bootstrap
    source, sink, group = f"{topic_name}-in", f"{topic_name}-out", f"{topic_name}-g"
    create_topics(bootstrap, source, sink)
    produce_inputs(bootstrap, source)

    rng = random.Random(19)
    workers = [start_worker(bootstrap, group, f"{topic_name}-eos-{n}", source, sink, tmp_path) for n in (0, 1)]
    progress = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.5))
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            server.start()
            server.wait_ready()
            assert all(w.poll() is None for w in workers), "a worker died"
            progress.append(committed_total(bootstrap, group, source))
        deadline = time.monotonic() + 240
        while committed_total(bootstrap, group, source) < INPUTS:
            assert time.monotonic() < deadline, f"committed {committed_total(bootstrap, group, source)} of {INPUTS}"
            assert all(w.poll() is None for w in workers), "a worker died"
            time.sleep(0.5)
    finally:
        for worker in workers:
            stop(worker)

    assert_exactly_once(bootstrap, source, sink, group)
    assert progress[0] < INPUTS, f"the kills all came after the pipeline had finished: {progress}"


def test_the_older_of_two_producers_with_one_transactional_id_is_fenced(bootstrap, topic_name):
    create_topics(bootstrap, topic_name)
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic_name}-z"})
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce(topic_name, value=b"zombie", partition=0)
    assert zombie.flush(20) == 0

    successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic_name}-z"})
    successor.init_transactions(30)  # aborts the zombie's open transaction first
    successor.begin_transaction()
    successor.produce(topic_name, value=b"successor", partition=0)
    successor.commit_transaction(20)

    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(20)
    assert raised.value.args[0].fatal()
    assert read_committed(bootstrap, topic_name, 1, 10) == [b"successor"]


def transactions_listed(bootstrap: str) -> list[dict]:
    listed = subprocess.run([str(Path(sys.executable).with_name("groupcoord")), "groups", "--bootstrap-server",
                             bootstrap, "--transactions", "--output", "json"], capture_output=True, text=True,
                            timeout=30)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)  # type: ignore[no-any-return]


def test_the_groups_tool_lists_open_transactions_first_and_completed_ones_after(bootstrap, topic_name):
    create_topics(bootstrap, topic_name)
    producers = {}
    for name in ("done", "open"):
        producer = producers[name] = Producer({"bootstrap.servers": bootstrap,
                                               "transactional.id": f"{topic_name}-{name}"})
        producer.init_transactions(20)
        producer.begin_transaction()
        producer.produce(topic_name, value=name.encode(), partition=0)
        producer.produce(topic_name, value=name.encode(), partition=1)
        assert producer.flush(20) == 0
    producers["done"].abort_transaction(20)

    mine = [t for t in transactions_listed(bootstrap) if t["TRANSACTIONAL-ID"].startswith(topic_name)]
    assert [(t["TRANSACTIONAL-ID"], t["STATE"], t["TIMEOUT-MS"], t["PARTITIONS"]) for t in mine] == [
        (f"{topic_name}-open", "Ongoing", 60_000, 2), (f"{topic_name}-done", "CompleteAbort", 60_000, 0)]
    assert mine[0]["DURATION-MS"] >= 0 and mine[1]["DURATION-MS"] is None
    producers["open"].commit_transaction(20)
    assert read_committed(bootstrap, topic_name, 2, 10) == [b"open", b"open"]


def test_a_hung_transaction_is_aborted_after_its_timeout_and_the_lso_moves_on(server_factory, topic_name):
    http_port = free_port()
    server = server_factory("transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
                            f"http.listener=127.0.0.1:{http_port}")
    bootstrap = server.bootstrap
    create_topics(bootstrap, topic_name)
    hung = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic_name}-hung",
                     "transaction.timeout.ms": 5000, "message.timeout.ms": 5000})
    hung.init_transactions(20)
    hung.begin_transaction()
    hung.produce(topic_name, value=b"never committed", partition=0)
    assert hung.flush(20) == 0
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic_name, value=b"after", partition=0)
    assert plain.flush(20) == 0

    # The open transaction holds the LSO below "after" until the timeout aborts it (5 s + a scan).
    # librdkafka answers a read_committed consumer's watermark query with the LSO (ListOffsets isolation 1).
    assert watermarks(bootstrap, topic_name, "read_uncommitted") == (0, 2)
    assert watermarks(bootstrap, topic_name, "read_committed") == (0, 0)
    assert read_committed(bootstrap, topic_name, 1, 15) == [b"after"]
    assert '"transaction_timed_out"' in server.log_tail(200_000)
    assert watermarks(bootstrap, topic_name, "read_committed") == (0, 3)  # past the ABORT marker
    _, page = http_get(http_port, "/metrics")
    assert sample(page, "groupcoord_transactions_timed_out_total") == 1
    assert sample(page, "groupcoord_transactions_completed_total", result="abort") == 1
    assert sample(page, "groupcoord_transactions_open", state="Ongoing") == 0
    with pytest.raises(KafkaException):
        hung.commit_transaction(10)


def test_kafka_python_commits_aborts_and_sends_offsets_in_transactions(bootstrap, topic_name):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    create_topics(bootstrap, topic_name)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic_name}-kp")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic_name, b"committed", partition=0)
        producer.send_offsets_to_transaction({KTopicPartition(topic_name, 0): OffsetAndMetadata(7, "", -1)},
                                             f"{topic_name}-g")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic_name, b"aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    assert read_committed(bootstrap, topic_name, 1, 10) == [b"committed"]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"{topic_name}-g", enable_auto_commit=False)
    try:
        assert consumer.committed(KTopicPartition(topic_name, 0)) == 7
    finally:
        consumer.close()


def test_aiokafka_commits_aborts_and_sends_offsets_in_transactions(bootstrap, topic_name):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as ATopicPartition

    create_topics(bootstrap, topic_name)

    async def run() -> int | None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{topic_name}-aio")
        await producer.start()
        try:
            async with producer.transaction():  # aiokafka speaks v0 of every transactional API
                await producer.send(topic_name, b"committed", partition=0)
                await producer.send_offsets_to_transaction({ATopicPartition(topic_name, 0): 5}, f"{topic_name}-g")
            await producer.begin_transaction()
            await producer.send(topic_name, b"aborted", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=f"{topic_name}-g", enable_auto_commit=False)
        await consumer.start()
        try:
            return await consumer.committed(ATopicPartition(topic_name, 0))
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == 5
    assert read_committed(bootstrap, topic_name, 1, 10) == [b"committed"]


def test_kafkajs_commits_aborts_and_sends_offsets_in_transactions(server, topic_name, kafkajs_dir):
    import json

    from .support import require_tool

    result = subprocess.run([require_tool("node"), "transactions.js", str(server.port), topic_name, f"{topic_name}-g"],
                            cwd=kafkajs_dir, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 0, (out, result.stderr[-3000:])
    assert out == {"values": ["committed"], "offset": "3"}
