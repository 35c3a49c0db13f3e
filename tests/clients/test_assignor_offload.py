"""KIP-1263 end to end: confluent-kafka consumers (`group.protocol=consumer`) against a server whose
assignor runs are offloaded to worker processes (the default), with the default 1 s batching.

The server logs one `assignor_run_completed` line per run with the worker's pid: each must be a
process other than the server's, and the group must end up with every partition owned once.
"""

from __future__ import annotations

import json
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

PARTITIONS = 6


def _consumer(bootstrap: str, group: str, topic: str, owned: dict[str, set[int]], name: str) -> Consumer:
    def on_assign(consumer: Consumer, partitions: list) -> None:
        owned[name] |= {p.partition for p in partitions}

    def on_revoke(consumer: Consumer, partitions: list) -> None:
        owned[name] -= {p.partition for p in partitions}

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})
    owned[name] = set()
    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    return consumer


def _poll_until(consumers: dict[str, Consumer], done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for consumer in consumers.values():
            consumer.poll(0.05)
        if done():
            return True
    return False


def _runs(server) -> list[dict]:
    runs = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        if "assignor_run_completed" in line:
            try:
                runs.append(json.loads(line))
            except ValueError:
                runs.append({"raw": line})
    return runs


def test_offloaded_assignment_serves_real_consumers_from_worker_processes(server, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(topic_name, PARTITIONS, 1)])["" + topic_name].result(timeout=10)
    owned: dict[str, set[int]] = {}
    consumers: dict[str, Consumer] = {}
    started = time.monotonic()
    try:
        consumers["c1"] = _consumer(server.bootstrap, "offload-group", topic_name, owned, "c1")
        # The first member of a new group gets its partitions from the first run without waiting
        # out a heartbeat interval: its heartbeat is answered once the run lands.
        assert _poll_until(consumers, lambda: len(owned["c1"]) == PARTITIONS, 10), owned
        first_assignment_s = time.monotonic() - started
        assert first_assignment_s < 4.5, f"first assignment took {first_assignment_s:.1f}s"
        for name in ("c2", "c3"):
            consumers[name] = _consumer(server.bootstrap, "offload-group", topic_name, owned, name)

        def balanced() -> bool:
            sets = [owned[n] for n in consumers]
            everything = set().union(*sets)
            return (everything == set(range(PARTITIONS)) and sum(map(len, sets)) == PARTITIONS
                    and all(len(s) == 2 for s in sets))

        assert _poll_until(consumers, balanced, CLIENT_TEST_TIMEOUT_S), owned
    finally:
        for consumer in consumers.values():
            consumer.close()
    runs = _runs(server)
    assert runs, server.log_tail()
    server_pid = server.proc.pid
    pids = {r.get("worker_pid") for r in runs}
    assert None not in pids and server_pid not in pids, runs
