"""Kafka Connect in distributed mode against groupcoord: two workers form a group of protocol type
``connect`` (incremental cooperative rebalancing, protocol `sessioned`), keep their configs, offsets and
status in compacted topics they create, and run a file source connector (groupcoord.clients.LineFileSource)
that survives the SIGKILL of the worker running its task: every line reaches the topic."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.conftest import free_port

from .java_processes import JavaAdmin, quick_java_command, wait_until

# Two Connect JVMs (about 10-20 s each to start on a loaded machine) and a session timeout to wait out.
pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(240)]

GROUP = "connect-cluster"
SESSION_TIMEOUT_MS = 6000


class ConnectWorker:
    """org.apache.kafka.connect.cli.ConnectDistributed with a REST listener on a free loopback port."""

    def __init__(self, bootstrap: str, name: str, log_dir: Path) -> None:
        self.name = name
        self.port = free_port("127.0.0.1")
        self.url = f"http://127.0.0.1:{self.port}"
        properties = log_dir / f"{name}.properties"
        properties.write_text("\n".join([
            f"bootstrap.servers={bootstrap}", f"group.id={GROUP}",
            f"listeners=http://127.0.0.1:{self.port}", "rest.advertised.host.name=127.0.0.1",
            f"rest.advertised.port={self.port}",
            "config.storage.topic=connect-configs", "offset.storage.topic=connect-offsets",
            "status.storage.topic=connect-status", "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1", "status.storage.replication.factor=1",
            "offset.storage.partitions=5", "status.storage.partitions=3",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms=500", f"session.timeout.ms={SESSION_TIMEOUT_MS}", "heartbeat.interval.ms=1000",
            # A lost worker's connectors and tasks go to the others at once, not after Connect's 5 minutes.
            "scheduled.rebalance.max.delay.ms=0",
            "plugin.discovery=only_scan",
        ]) + "\n")
        with open(log_dir / f"{name}.log", "wb") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(quick_java_command("org.apache.kafka.connect.cli.ConnectDistributed",
                                                            str(properties)),
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def rest(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read() or b"null")

    def try_rest(self, path: str):
        assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}"
        try:
            return self.rest("GET", path)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def _topic_lines(bootstrap: str, topic: str) -> set[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-reader", "enable.auto.commit": False,
                         "logger": logging.getLogger("librdkafka")})
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        lines, position = set(), 0
        while position < end:
            message = consumer.poll(5)
            assert message is not None and message.error() is None, message and message.error()
            lines.add(message.value().decode())
            position = message.offset() + 1
        return lines
    finally:
        consumer.close()


def test_a_connect_cluster_of_two_workers_survives_a_worker_sigkill(server_factory, topic_name, tmp_path):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    source_file, topic = tmp_path / "input.txt", f"{topic_name}-lines"
    workers: list[ConnectWorker] = []
    admin = None
    try:
        admin = JavaAdmin(server.bootstrap, tmp_path)
        admin(f"createTopic {topic} 1")
        workers = [ConnectWorker(server.bootstrap, f"worker-{i}", tmp_path) for i in range(2)]
        wait_until(lambda: all(w.try_rest("/connectors") == [] for w in workers), 120,
                   lambda: [w.try_rest("/") for w in workers], interval_s=0.5)

        source_file.write_text("".join(f"line-{i}\n" for i in range(100)))
        workers[0].rest("POST", "/connectors", {"name": "lines", "config": {
            "connector.class": "groupcoord.clients.LineFileSource", "tasks.max": "1",
            "file": str(source_file), "topic": topic}})

        def task_running(worker: ConnectWorker):
            status = worker.try_rest("/connectors/lines/status")
            if status and status["connector"]["state"] == "RUNNING" and status["tasks"] \
                    and status["tasks"][0]["state"] == "RUNNING":
                return status["tasks"][0]["worker_id"]
            return None
        runner = wait_until(lambda: task_running(workers[1]), 60,
                            lambda: workers[1].try_rest("/connectors/lines/status"))
        wait_until(lambda: len(_topic_lines(server.bootstrap, topic)) == 100, 30,
                   lambda: len(_topic_lines(server.bootstrap, topic)), interval_s=0.5)

        # The group: protocol type `connect`, Stable once the rebalances for the new connector and its task
        # are over.
        def listed():
            return next(g for g in admin("listGroups") if g["groupId"] == GROUP)
        wait_until(lambda: listed()["state"] == "Stable", 30, listed, interval_s=0.3)
        assert listed()["protocol"] == "connect"

        # SIGKILL the worker running the task; more lines arrive meanwhile.
        victim = next(w for w in workers if runner.endswith(f":{w.port}"))
        survivor = next(w for w in workers if w is not victim)
        victim.kill()
        killed_at = time.monotonic()
        with source_file.open("a") as out:
            out.write("".join(f"line-{i}\n" for i in range(100, 200)))
        survivor_id = f"127.0.0.1:{survivor.port}"
        wait_until(lambda: task_running(survivor) == survivor_id, 60,
                   lambda: survivor.try_rest("/connectors/lines/status"), interval_s=0.5)
        # Noticed through the victim's session expiring (a SIGKILLed worker sends no LeaveGroup).
        assert time.monotonic() - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5
        expected = {f"line-{i}" for i in range(200)}
        wait_until(lambda: _topic_lines(server.bootstrap, topic) == expected, 30,
                   lambda: expected - _topic_lines(server.bootstrap, topic), interval_s=0.5)
        # Connect's internal topics: created by the workers themselves, compacted as Connect requires.
        for internal in ("connect-configs", "connect-offsets", "connect-status"):
            assert admin(f"describeTopicConfig {internal}")["cleanup.policy"] == "compact", internal
    finally:
        for worker in workers:
            worker.stop()
        if admin is not None:
            admin.stop()
