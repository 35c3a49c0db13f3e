"""Metrics out of a live server: the Prometheus page, StatsD datagrams, and the health endpoints.

A real kafka-python consumer group rebalances and commits; the counters must have moved by
exactly what the clients did, on the page and in the datagrams an asyncio-dgram listener got.
"""

from __future__ import annotations

import asyncio
import re
import urllib.error
import urllib.request

import asyncio_dgram
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from tests.conftest import free_port

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

TOPIC, GROUP = "metered", "metered-group"


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(page: str, name: str, **labels: str) -> float:
    """The value of one series on a Prometheus page (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = "^" + re.escape(name) + (r"\{" + re.escape(wanted) + r"\}" if labels else "") + r" (\S+)$"
    match = re.search(pattern, page, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


async def _collect_datagrams(listener: asyncio_dgram.DatagramServer, seconds: float) -> list[str]:
    lines: list[str] = []
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return lines
        try:
            data, _ = await asyncio.wait_for(listener.recv(), remaining)
        except TimeoutError:
            return lines
        lines += data.decode().splitlines()


def statsd_total(lines: list[str], name: str) -> float:
    """Sum of a StatsD counter's increments, whatever its tags."""
    total = 0.0
    for line in lines:
        metric, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        if metric == name and kind.startswith("c"):
            total += float(value)
    return total


async def test_prometheus_page_and_statsd_count_what_a_real_group_did(server_factory):
    http_port = free_port()
    listener = await asyncio_dgram.bind(("127.0.0.1", 0))
    statsd_port = listener.sockname[1]
    server = server_factory("group.initial.rebalance.delay.ms=0", f"http.listener=127.0.0.1:{http_port}",
                            f"metrics.statsd.address=127.0.0.1:{statsd_port}", "metrics.statsd.interval.ms=100",
                            "metrics.statsd.prefix=gc")
    try:
        assert http_get(http_port, "/healthz") == (200, "ok\n")
        assert http_get(http_port, "/readyz") == (200, "ready\n")
        assert http_get(http_port, "/nope")[0] == 404

        def run_clients() -> None:
            admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
            admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])
            admin.close()
            producer = KafkaProducer(bootstrap_servers=server.bootstrap)
            for i in range(10):
                producer.send(TOPIC, value=b"x", partition=i % 2)
            producer.flush()
            producer.close()
            consumer = KafkaConsumer(TOPIC, bootstrap_servers=server.bootstrap, group_id=GROUP,
                                     enable_auto_commit=False, auto_offset_reset="earliest",
                                     consumer_timeout_ms=3000)
            for _ in range(3):  # three commits of two partitions each
                consumer.poll(timeout_ms=500)
                consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(5, "", -1) for p in range(2)})
            consumer.close()  # leaves the group: a second rebalance, into Empty

        await asyncio.to_thread(run_clients)
        datagrams = await _collect_datagrams(listener, 1.0)
    finally:
        listener.close()

    status, page = http_get(http_port, "/metrics")
    assert status == 200
    assert sample(page, "kafka_server_group_coordinator_metrics_offset_commit_count") == 6
    assert sample(page, "groupcoord_rebalances_total", trigger="member_joined") == 1
    assert sample(page, "groupcoord_rebalances_total", trigger="member_left") == 1
    # kafka-python's leader may rejoin once more after its first metadata refresh (trigger member_rejoined):
    # whatever happened, every started rebalance completed and was timed.
    started = sum(float(v) for v in re.findall(r'^groupcoord_rebalances_total\{trigger="[a-z_]+"\} (\S+)$', page,
                                                 re.MULTILINE))
    assert started >= 2
    assert sample(page, "kafka_server_group_coordinator_metrics_group_completed_rebalance_count") == started
    assert sample(page, "groupcoord_rebalance_duration_ms_count") == started
    assert sample(page, "kafka_server_group_coordinator_metrics_classic_group_count", state="Empty") == 1
    assert sample(page, "kafka_server_group_coordinator_metrics_offset_count") == 2
    assert sample(page, "kafka_network_request_metrics_requests_total", request="OffsetCommit",
                  version=re.search(r'request="OffsetCommit",version="(\d+)"', page).group(1)) == 3
    assert sample(page, "kafka_network_request_metrics_total_time_ms_count", request="JoinGroup") >= 1
    assert sample(page, "groupcoord_log_size_bytes", topic=TOPIC) > 0

    assert statsd_total(datagrams, "gc.kafka_server_group_coordinator_metrics_offset_commit_count") == 6
    assert statsd_total(datagrams, "gc.groupcoord_rebalances") == started
    assert any(line.startswith("gc.kafka_network_request_metrics_total_time_ms:") and "|ms" in line
               and "#request:OffsetCommit" in line for line in datagrams)
    assert any(line.startswith("gc.kafka_server_group_coordinator_metrics_offset_count:2|g") for line in datagrams)


def test_a_bad_http_listener_address_stops_start_up_with_a_readable_error(server_factory):
    bad = server_factory("http.listener=nowhere", ready=False)
    assert bad.proc.wait(timeout=30) == 2
    assert "http.listener" in bad.log_tail() and "host:port" in bad.log_tail()
