"""Issue 20's acceptance for the report: clean closes of every client kind, SIGKILLed members and an
admin removal give left / removed / expired counts that are exactly what happened, for a classic
group and a consumer-protocol group, read from the log the real server wrote.

Classic group, one member at a time (each departure empties the group, so each is one generation):
kafka-python close (LeaveGroup without a reason text), aiokafka stop, kcat reading to the end (-e),
confluent-kafka close: 4 left; a confluent-kafka member SIGKILLed: 1 expired; a static kafka-python
member removed by KafkaAdminClient.remove_group_members: 1 removed.
Consumer-protocol group (group.protocol=consumer): two confluent-kafka closes: 2 left (heartbeat -1);
a confluent-kafka member SIGKILLed: 1 expired. kcat is the classic protocol's only: Debian's kcat 1.7.1
runs on the system librdkafka 2.0.2, which has no group.protocol property (it came with librdkafka 2.4),
so kcat exits 1 with 'No such configuration property: "group.protocol"' before it connects to any broker.
The same kcat on a librdkafka with KIP-848 (the confluent-kafka wheel's) joins, consumes and leaves here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

TOPIC, CLASSIC, CONSUMER = "removals", "closes-classic", "closes-consumer"
SESSION_MS = 3000
CHILD = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    config = {"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": "doomed",
              "enable.auto.commit": False}
    if sys.argv[3] == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config.update({"session.timeout.ms": 3000, "heartbeat.interval.ms": 500})
    c = Consumer(config)
    c.subscribe([sys.argv[4]])
    while not c.assignment():
        c.poll(0.1)
    print("assigned", flush=True)
    while True:
        c.poll(0.1)
""")


def _until(done, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _confluent(bootstrap: str, group: str, protocol: str, client_id: str):
    from confluent_kafka import Consumer

    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
              "enable.auto.commit": False}
    if protocol == "consumer":
        config["group.protocol"] = "consumer"
    consumer = Consumer(config)
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        consumer.poll(0.1)
        assert time.monotonic() < deadline, "confluent-kafka got no assignment"
    return consumer


def _killed_child(bootstrap: str, group: str, protocol: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, bootstrap, group, protocol, TOPIC], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "assigned"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(10)


def _kcat_to_the_end(bootstrap: str, group: str) -> None:
    # -G: the balanced consumer; -e: exit (closing the consumer, a clean leave) once every partition is read
    subprocess.run(["kcat", "-b", bootstrap, "-G", group, "-X", "client.id=kcat", "-e", "-q", TOPIC],
                   check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _kafka_python(bootstrap: str, **kw):
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=CLASSIC, enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=500, **kw)
    # The topic known before the first join, or the leader rejoins when its metadata arrives and
    # kafka-python 3.0.12 can lose that rejoin (see kafka_python_member in tests/clients/test_group_acceptance.py).
    consumer.partitions_for_topic(TOPIC)
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        consumer.poll(timeout_ms=100)
        assert time.monotonic() < deadline, "kafka-python got no assignment"
    return consumer


async def _aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=CLASSIC, client_id="aiokafka",
                                enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500)
    await consumer.start()
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
            assert time.monotonic() < deadline, "aiokafka got no assignment"
    finally:
        await consumer.stop()


def _group_is_empty(admin, group: str) -> bool:
    """librdkafka's describe: ConsumerGroupDescribe for consumer-protocol groups, DescribeGroups else."""
    description = admin.describe_consumer_groups([group])[group].result(30)
    return not description.members


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import MemberToRemove, NewTopic

    from tests.conftest import ServerProcess, free_port, server_command

    port = free_port()
    work = tmp_path_factory.mktemp("removals")
    data_dir = work / "data"
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(data_dir),
                 "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000",
                 "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": str(SESSION_MS),
                 "group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.heartbeat.interval.ms": "500"}
    argv = [*server_command(), "serve", *(arg for k, v in overrides.items() for arg in ("--override", f"{k}={v}"))]
    server = ServerProcess("127.0.0.1", port, data_dir, work / "server.log", argv).start()
    try:
        server.wait_ready()
        bootstrap = server.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="admin")
        describer = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(10):
            producer.send(TOPIC, value=b"x", partition=i % 2)
        producer.flush()
        producer.close()
        empty = lambda: _group_is_empty(describer, CLASSIC)  # noqa: E731

        # classic: 4 clean closes, 1 kill, 1 admin removal
        _kafka_python(bootstrap, client_id="kafka-python").close()
        _until(empty, "kafka-python's leave")
        asyncio.run(_aiokafka(bootstrap))
        _until(empty, "aiokafka's leave")
        _kcat_to_the_end(bootstrap, CLASSIC)
        _until(empty, "kcat's leave")
        _confluent(bootstrap, CLASSIC, "classic", "confluent").close()
        _until(empty, "confluent-kafka's leave")
        _killed_child(bootstrap, CLASSIC, "classic")
        _until(empty, "the killed member's session expiry", timeout_s=30)
        static = _kafka_python(bootstrap, client_id="static-x", group_instance_id="static-x")
        admin.remove_group_members(CLASSIC, [MemberToRemove(group_instance_id="static-x")])
        _until(empty, "the admin removal")
        static.close()  # a static member sends no LeaveGroup; it is already gone

        # consumer protocol: 2 clean closes, 1 kill
        _confluent(bootstrap, CONSUMER, "consumer", "confluent-848").close()
        _until(lambda: _group_is_empty(describer, CONSUMER), "the consumer member's leave")
        _confluent(bootstrap, CONSUMER, "consumer", "confluent-848-b").close()
        _until(lambda: _group_is_empty(describer, CONSUMER), "the second consumer member's leave")
        _killed_child(bootstrap, CONSUMER, "consumer")
        _until(lambda: _group_is_empty(describer, CONSUMER), "the consumer member's session expiry", timeout_s=30)
        admin.close()
    finally:
        server.stop()
    return data_dir


@pytest.fixture(scope="module")
def report(log_dir, spark_session, tmp_path_factory):
    from spark_jobs.group_history import build_report

    out = tmp_path_factory.mktemp("removals-report")
    return out, build_report(spark_session, log_dir, out)


def test_classic_left_removed_expired_are_what_happened(report, spark_session) -> None:
    out, _summary = report
    events = spark_session.read.parquet(str(out / "membership_events")).where(f"group_id = '{CLASSIC}'").collect()
    gone = Counter(r.event for r in events if r.event != "joined")
    assert gone == {"left": 4, "expired": 1, "removed": 1}, sorted((r.event, r.client_id) for r in events)
    by_client = {(r.event, r.client_id) for r in events if r.event != "joined"}
    assert by_client == {("left", "kafka-python"), ("left", "aiokafka"), ("left", "kcat"), ("left", "confluent"),
                         ("expired", "doomed"), ("removed", "static-x")}


def test_consumer_protocol_left_removed_expired_are_what_happened(report) -> None:
    _out, summary = report
    group = summary["consumer_groups"]["per_group"][CONSUMER]
    assert (group["joined"], group["left"], group["removed"], group["expired"]) == (3, 2, 0, 1), group
    assert group["epoch_bumps"] >= 6 and group["assignor_runs"] >= 3
