"""The cluster rows of `make bench-compare`: durable commits through PostgreSQL against the file store,
and the time a group's commits stop when the node (broker) coordinating it is SIGKILLed.

- groupcoord: tests/bench/cluster_store.py's measurements (commits/s and p99 of durable OffsetCommits on
  one node over a throwaway PostgreSQL and on the file store; a three-node cluster, the group's
  coordinator SIGKILLed KILLS times, seconds until a survivor acknowledges a commit).
- Apache Kafka: the same Kafka 4.4 as the other rows, as a three-broker KRaft cluster (every broker a
  controller too, `__consumer_offsets` replicated three times, Kafka's defaults otherwise: a dead
  broker is fenced after broker.session.timeout.ms, 9 s); the group's coordinator broker SIGKILLed
  KILLS times (started again in between), seconds until a survivor acknowledges a commit. The same
  client (tests/cluster/wire.py's WireCommitter: FindCoordinator, OffsetCommit every 10 ms, moving on
  NOT_COORDINATOR or a cut connection) drives both.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from coordinator.server.worker_processes import die_with_parent

if TYPE_CHECKING:
    from tests.kafka_oracle import KafkaOracle

BROKERS = 3
KAFKA_HEAP = "512m"  # three JVMs on the bench machine: half of kafka-server-start's 1G each
KAFKA_CLUSTER_SETTINGS = {
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}
READY_TIMEOUT_S = 180


def groupcoord_figures(seconds: float, kills: int) -> dict[str, float]:
    """Durable commits on both stores and the failover time of a three-node cluster (median of `kills`)."""
    from coordinator.cluster.local import ThrowawayPostgres, free_port, node_command
    from tests.bench import cluster_store as bench

    postgres = ThrowawayPostgres().start()
    root = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    try:
        file_port = free_port()
        server = bench._start([sys.executable, "-m", "coordinator", "serve", "--override",
                               f"listeners=PLAINTEXT://127.0.0.1:{file_port}", "--override",
                               f"log.dirs={root / 'file'}"], root / "file.log")
        try:
            bench._ready(file_port)
            bench._create_topics(file_port)
            files = bench.measure_commits(file_port, seconds, 8)
        finally:
            bench._stop(server)
        url = postgres.create_database("commits")
        subprocess.run([sys.executable, "-m", "coordinator", "db", "init", "--store-url", url], check=True,
                       capture_output=True)
        node_port = free_port()
        node = bench._start(node_command(1, node_port, url, root / "pg"), root / "pg.log")
        try:
            bench._ready(node_port)
            bench._create_topics(node_port)
            bench._wait_balanced(url, 1)
            pg = bench.measure_commits(node_port, seconds, 8)
        finally:
            bench._stop(node)
        times = bench.measure_failover(postgres, root, kills)
    finally:
        postgres.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {"durable_commits_per_s_files": files["commits_per_s"], "durable_commit_p99_ms_files": files["p99_ms"],
            "durable_commits_per_s_postgresql": pg["commits_per_s"],
            "durable_commit_p99_ms_postgresql": pg["p99_ms"],
            "failover_s": statistics.median(times), "failover_max_s": max(times)}


def kafka_figures(kills: int) -> dict[str, float]:
    """Kafka's own failover: three KRaft brokers, the group's coordinator SIGKILLed `kills` times."""
    from tests.cluster.wire import WireCommitter
    from tests.conftest import free_port
    from tests.kafka_oracle import KafkaOracle, kafka_cluster_id

    root = Path(tempfile.mkdtemp(prefix="bench-kafka-cluster-"))
    cluster_id = kafka_cluster_id()
    ports = {i: free_port() for i in range(1, BROKERS + 1)}
    controllers = {i: free_port() for i in range(1, BROKERS + 1)}
    voters = ",".join(f"{i}@127.0.0.1:{controllers[i]}" for i in controllers)
    brokers = {i: KafkaOracle(root / f"broker-{i}", heap=KAFKA_HEAP, port=ports[i], controller_port=controllers[i],
                              cluster_id=cluster_id,
                              settings={**KAFKA_CLUSTER_SETTINGS, "node.id": str(i),
                                        "controller.quorum.voters": voters})
               for i in ports}
    times: list[float] = []
    try:
        for broker in brokers.values():
            broker.start()
        for broker in brokers.values():
            _wait_kafka_ready(broker)
        _create_topic(ports)
        nodes = [("127.0.0.1", ports[i]) for i in sorted(ports)]
        for kill in range(kills):
            group = f"failover-{kill}-{time.monotonic_ns()}"
            committer = WireCommitter(nodes, group)
            thread = threading.Thread(target=committer.run, daemon=True)
            thread.start()
            try:
                deadline = time.monotonic() + READY_TIMEOUT_S
                while not committer.acknowledged:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no commit acknowledged by Kafka (errors {committer.errors[-5:]})")
                    time.sleep(0.01)
                victim = _kafka_coordinator(nodes, group)
                killed_at = time.monotonic()
                brokers[victim].proc.kill()  # type: ignore[union-attr]
                brokers[victim].proc.wait()  # type: ignore[union-attr]
                deadline = killed_at + READY_TIMEOUT_S
                while not any(t > killed_at for t, _ in committer.acknowledged):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"Kafka took no commit after the kill (errors {committer.errors[-5:]})")
                    time.sleep(0.01)
                times.append(next(t for t, _ in committer.acknowledged if t > killed_at) - killed_at)
            finally:
                committer.stop = True
                thread.join(10)
            _relaunch(brokers[victim])  # its log and metadata kept: it rejoins as a follower
            _wait_kafka_ready(brokers[victim])
            _await_replicas_in_sync(nodes)
    finally:
        for broker in brokers.values():
            if broker.proc is not None:
                broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    return {"failover_s": statistics.median(times), "failover_max_s": max(times)}


def _relaunch(broker: KafkaOracle) -> None:
    """The killed broker again, on its formatted storage and its properties (start() would format)."""
    from tests.kafka_oracle import kafka_java_command

    with open(broker.log_path, "ab") as log:
        broker.proc = subprocess.Popen(
            kafka_java_command("kafka.Kafka", str(broker.workdir / "server.properties"), heap=broker.heap,
                               jvm_flags=broker.jvm_flags),
            cwd=broker.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=functools.partial(die_with_parent, os.getpid()))


def _wait_kafka_ready(broker: object) -> None:
    from tests.conftest import api_versions_round_trip
    from tests.kafka_oracle import find_coordinator_error

    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            api_versions_round_trip("127.0.0.1", broker.port, timeout=2.0)  # type: ignore[attr-defined]
            if find_coordinator_error("127.0.0.1", broker.port, "bench-probe") == 0:  # type: ignore[attr-defined]
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline or broker.proc.poll() is not None:  # type: ignore[attr-defined]
            raise TimeoutError(f"kafka broker not ready:\n{broker.log_tail()}")  # type: ignore[attr-defined]
        time.sleep(0.2)  # readiness poll


def _create_topic(ports: dict[int, int]) -> None:
    from tests.server.admin_wire import create_topic
    from tests.server.conftest import KafkaWire

    wire = KafkaWire("127.0.0.1", ports[1])
    try:
        create_topic(wire, "t")
    finally:
        wire.close()


def _kafka_coordinator(nodes: list[tuple[str, int]], group: str) -> int:
    from tests.cluster.wire import find_coordinator
    from tests.server.conftest import KafkaWire

    wire = KafkaWire(*nodes[0])
    try:
        code, node = find_coordinator(wire, group)
    finally:
        wire.close()
    assert code == 0, code
    return node


def _await_replicas_in_sync(nodes: list[tuple[str, int]], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until every `__consumer_offsets` partition has its three replicas in sync again (the restarted
    broker caught up), so that the next kill meets the cluster as the first did."""
    from protocol.api_keys import ApiKey
    from protocol.messages import MetadataRequest
    from protocol.primitives import ZERO_UUID
    from tests.server.conftest import KafkaWire

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        wire = KafkaWire(*nodes[0])
        try:
            [topic] = wire.request(ApiKey.METADATA, 12, MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(ZERO_UUID, "__consumer_offsets")],
                allow_auto_topic_creation=False)).topics
        finally:
            wire.close()
        if topic.partitions and all(len(p.isr_nodes) == BROKERS for p in topic.partitions):
            return
        time.sleep(0.5)  # poll
    raise TimeoutError("the restarted broker did not catch up")
