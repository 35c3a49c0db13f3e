"""The group-history Spark job over a log written by the real server during a scripted scenario.

Scenario (confluent-kafka, one static member): join (one rebalance), four commits, a restart of the
static member within its session timeout (a static replacement, no rebalance), one more commit.
The report must count exactly that.
"""

from __future__ import annotations

import json
import logging
import time
from html.parser import HTMLParser

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pyspark = pytest.importorskip("pyspark", reason="the spark extra is installed by `make test`")

from spark_jobs.group_history import build_report, session  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]
GROUP, TOPIC = "history", "history-topic"


@pytest.fixture(scope="session")
def spark():
    spark_session = session("local[2]")
    yield spark_session
    spark_session.stop()


def _static_consumer(bootstrap: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "group.instance.id": "static-a",
                         "client.id": "history-client", "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 30_000, "logger": logging.getLogger("librdkafka")})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.1)
    assert consumer.assignment(), "the static member was never assigned its partition"
    return consumer


@pytest.fixture
def scenario_log(server_factory):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    config = {"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")}
    admin = AdminClient(config)  # kept referenced until the future resolves
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(20)
    producer = Producer(config)
    for i in range(10):
        producer.produce(TOPIC, value=str(i).encode())
    assert producer.flush(20) == 0
    consumer = _static_consumer(server.bootstrap)
    for offset in (1, 2, 3, 4):
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    consumer.close()  # a static member leaves no LeaveGroup behind: its seat waits for it
    consumer = _static_consumer(server.bootstrap)  # back within the session timeout: replaced, no rebalance
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    consumer.close()
    server.stop()
    return server.data_dir


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.headings: list[str] = []
        self.svgs = 0
        self._in_h2 = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._in_h2 = tag == "h2"
        self.svgs += tag == "svg"

    def handle_data(self, data: str) -> None:
        if self._in_h2:
            self.headings.append(data)
            self._in_h2 = False


def test_report_counts_the_scenarios_rebalances_replacements_and_commits(spark, scenario_log, tmp_path):
    summary = build_report(spark, str(scenario_log), str(tmp_path / "out"))
    group = summary["per_group"][GROUP]
    assert group["rebalances"] == 1, group
    assert group["static_replacements"] == 1, group
    assert group["commits"] == 5, group
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["commits"] == summary["commits"]

    current = spark.read.parquet(str(tmp_path / "out" / "current_offsets")).where(f"group_id = '{GROUP}'").collect()
    assert [(r.topic, r.topic_partition, r.committed_offset) for r in current] == [(TOPIC, 0, 5)]
    progress = spark.read.parquet(str(tmp_path / "out" / "offset_progress")).where(f"group_id = '{GROUP}'").collect()
    assert [(r.commits, r.first_offset, r.last_offset) for r in progress] == [(5, 1, 5)]

    page = _Sections()
    page.feed((tmp_path / "out" / "report.html").read_text())
    assert {"Rebalances per group", "Offset commits per group", "Rebalance timeline"} <= set(page.headings)
    assert page.svgs >= 3
