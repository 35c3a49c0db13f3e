"""Chaos: random nodes SIGKILLed (and restarted) under load, and PostgreSQL stopped for 5 s.

Committers on the wire keep committing larger offsets to whichever node coordinates their group, and
an idempotent acks=all producer (confluent-kafka) writes to a 3-partition topic led by the nodes.
Nothing acknowledged may be lost (each group's committed offset is at least its last acknowledged
one; every acknowledged record is read back, once, in order), errors must be ones Kafka's clients
retry, and the cluster must recover by itself.
"""

from __future__ import annotations

import random
import signal
import threading
import time

from protocol.error_codes import ErrorCode
from tests.cluster.producing import PARTITIONS, TOPIC, assert_every_acknowledged_record_readable, start_producer
from tests.cluster.wire import RETRIABLE, WireCommitter, create_shared_topic, fetch_offset
from tests.server.conftest import KafkaWire

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")
GROUPS = 6
KILLS = 20


def start_committers(cluster) -> tuple[list[WireCommitter], list[threading.Thread]]:
    create_shared_topic(cluster, "t")
    nodes = [(n.host, n.port) for _, n in sorted(cluster.nodes.items())]
    committers = [WireCommitter(nodes, f"chaos-{i}") for i in range(GROUPS)]
    threads = [threading.Thread(target=c.run, daemon=True) for c in committers]
    for thread in threads:
        thread.start()
    return committers, threads


def stop_committers(committers: list[WireCommitter], threads: list[threading.Thread]) -> None:
    for committer in committers:
        committer.stop = True
    for thread in threads:
        thread.join(30)


def committed(cluster, group: str, timeout: float = 20.0) -> int:
    """The group's committed offset, asked of its coordinator (retrying while shards move)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owner = cluster.owner_of(group)
        if owner is not None and owner in cluster.alive():
            node = cluster.nodes[owner]
            wire = KafkaWire(node.host, node.port)
            try:
                code, offset = fetch_offset(wire, group, "t")
            finally:
                wire.close()
            if code == ErrorCode.NONE:
                return offset
        time.sleep(0.1)
    raise TimeoutError(f"no coordinator answered for {group}")


def assert_nothing_lost(cluster, committers: list[WireCommitter]) -> None:
    for committer in committers:
        offsets = [offset for _, offset in committer.acknowledged]
        assert offsets == sorted(offsets)
        assert committed(cluster, committer.group) >= committer.last_acknowledged(), committer.group
        assert set(committer.errors) <= RETRIABLE, {ErrorCode(code).name for code in committer.errors}


def test_twenty_random_kills_under_load_lose_no_acknowledged_commit_or_record(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    committers, threads = start_committers(cluster)
    create_shared_topic(cluster, TOPIC, PARTITIONS)
    produced, producer = start_producer(cluster.bootstrap)
    chooser = random.Random(22)
    try:
        for _ in range(KILLS):
            time.sleep(chooser.uniform(0.5, 2.0))
            victim = chooser.choice(sorted(cluster.alive()))
            cluster.signal(victim, signal.SIGKILL)
            cluster.nodes[victim].start()  # comes back at once, as a supervisor restarts it (maybe killed again
            # while it starts)
        last_kill = time.monotonic()
        for node in cluster.nodes.values():
            node.wait_ready()
        deadline = last_kill + 20
        while any(c.acknowledged[-1][0] < last_kill for c in committers if c.acknowledged):
            assert time.monotonic() < deadline, "some group never committed again after the last kill"
            time.sleep(0.1)
        while any(produced.acknowledged_after(last_kill, p) == 0 for p in range(PARTITIONS)):
            assert time.monotonic() < deadline + 20, f"a partition took no record after the last kill: " \
                                                     f"{produced.errors[-3:]}"
            time.sleep(0.1)
    finally:
        stop_committers(committers, threads)
        produced.stop.set()
        producer.join(150)
    assert all(c.acknowledged for c in committers)
    assert_nothing_lost(cluster, committers)
    assert not producer.is_alive()
    assert produced.errors == [] and len(produced.acknowledged) == produced.sent
    assert_every_acknowledged_record_readable(cluster, produced)


def test_postgres_stopped_for_five_seconds_gives_retriable_errors_then_recovers(cluster_factory, postgres) -> None:
    cluster = cluster_factory(3, *LEASE)
    committers, threads = start_committers(cluster)
    create_shared_topic(cluster, TOPIC, PARTITIONS)
    produced, producer = start_producer(cluster.bootstrap)
    try:
        time.sleep(1.0)
        postgres.pg_ctl("stop")
        stopped_at = time.monotonic()
        time.sleep(5.0)
        # Down until the start begins: `pg_ctl("start")` returns only once pg_isready (polled every
        # 0.1 s) says so, and the nodes may reconnect and commit before that poll sees it.
        start_began = time.monotonic()
        postgres.pg_ctl("start")
        restarted_at = time.monotonic()
        deadline = restarted_at + 30
        while (any(not c.acknowledged or c.acknowledged[-1][0] < restarted_at for c in committers)
               or any(produced.acknowledged_after(restarted_at, p) == 0 for p in range(PARTITIONS))):
            assert time.monotonic() < deadline, "the cluster did not recover by itself"
            time.sleep(0.1)
        recovered_s = max(next(t for t, _ in c.acknowledged if t > restarted_at) for c in committers) - restarted_at
    finally:
        stop_committers(committers, threads)
        produced.stop.set()
        producer.join(150)
    # While the database was down nothing was acknowledged: an acknowledgement is a commit in PostgreSQL.
    for committer in committers:
        during = [t for t, _ in committer.acknowledged if stopped_at + 0.5 < t < start_began]
        assert during == [], (f"{committer.group} acknowledged commits while PostgreSQL was down "
                              f"(stopped at {stopped_at:.3f}, start began at {start_began:.3f})")
    # Records neither: an acknowledgement is a committed transaction (a delivery report can come a moment
    # after its answer, hence the margin after the stop, as for the commits).
    assert produced.acknowledged_after(stopped_at + 0.5) - produced.acknowledged_after(start_began) == 0
    assert_nothing_lost(cluster, committers)
    assert not producer.is_alive()
    assert produced.errors == [] and len(produced.acknowledged) == produced.sent
    assert_every_acknowledged_record_readable(cluster, produced)
    assert set(cluster.alive()) == {1, 2, 3}
    assert recovered_s < 30
