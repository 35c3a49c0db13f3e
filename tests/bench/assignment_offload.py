"""KIP-1263 assignor offload: does a churning 1,000-member group slow an unrelated small group down?

    .venv/bin/python -m tests.bench.assignment_offload                 # both modes, 15 s of churn each
    .venv/bin/python -m tests.bench.assignment_offload --seconds 5 --members 300
    .venv/bin/python -m tests.bench.assignment_offload --interval-ms 0   # no batching: every change runs

Part 1 (in process): the on-loop cost of one run of a 1,000-member / 1,000-topic / 50,000-partition
group: building the job's frozen inputs, pickling them (what the pool's feeder thread does),
the run itself, and applying a result.

Part 2 (real server, a subprocess on a free port, once with group.consumer.assignor.offload.enable
true and once false; batching at its default 1 s): raw-protocol ConsumerGroupHeartbeat clients
join `--members` members to a big group subscribed to `--topics` topics of 50 partitions, then
keep one member leaving and a new one joining every 20 ms. Meanwhile one member of a small group
(one topic) heartbeats back to back on its own connection; its round trips are timed. Target from
the brief: small-group heartbeat p99 < 50 ms with offload on.
"""

from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import tempfile
import time
from pathlib import Path

from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.messages import ConsumerGroupHeartbeatRequest, CreateTopicsRequest
from tests.conftest import local_server

PARTITIONS_PER_TOPIC = 50
JOIN_CONNECTIONS = 20
CHURN_EVERY_S = 0.02
TARGET_P99_MS = 50.0


# ---- part 1: the cost of one run on the loop --------------------------------------------------


def job_costs(members: int, topics: int) -> dict[str, float]:
    from coordinator.core.consumer.batching import on_assignment_result
    from coordinator.core.consumer.jobs import execute_assignment_job
    from coordinator.core.consumer.target import build_assignment_job
    from coordinator.core.runtime.effects import Effects
    from tests.core.consumer_group_context import Client, ConsumerGroupContext

    names = [f"t{i:04d}" for i in range(topics)]
    ctx = ConsumerGroupContext({n: PARTITIONS_PER_TOPIC for n in names}, assignment_interval_ms=10_000_000,
                               assignor_offload=True, assignment_wait_ms=0)
    ctx.clock.now_ms = 1_000
    first = ctx.join(topics=names)
    for job in first.jobs:  # one member assigned, the rest join within the (huge) interval: no runs
        ctx._apply(ctx.coordinator.on_assignment_result(execute_assignment_job(job), ctx.clock.now_ms, ctx.topics))
    for _ in range(members - 1):
        ctx.poll(Client("g", names))
    group = ctx.group()
    current = {mid: group.target_for(mid, m.instance_id) for mid, m in group.members.items()}
    started = time.perf_counter()
    job = build_assignment_job(ctx.state, group, group.group_epoch, group.members, group.subscription_metadata,
                               current)
    build_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    blob = pickle.dumps(job, pickle.HIGHEST_PROTOCOL)
    pickle_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    result = execute_assignment_job(job)
    run_ms = (time.perf_counter() - started) * 1000
    from coordinator.core.consumer.state import AssignmentRun

    ctx.state.runs["g"] = AssignmentRun(job.job_id, job.epoch, ctx.clock.now_ms,
                                        {mid: m.subscribed_topic_names for mid, m in group.members.items()},
                                        group.subscription_metadata, {}, job.topic_ids)
    fx = Effects(ctx.clock.now_ms)
    started = time.perf_counter()
    on_assignment_result(ctx.state, result, fx, ctx.topics)
    apply_ms = (time.perf_counter() - started) * 1000
    return {"build_ms": build_ms, "pickle_ms": pickle_ms, "pickle_kb": len(blob) / 1024, "run_ms": run_ms,
            "apply_ms": apply_ms, "changed": len(result.changed), "records": len(fx.records)}


# ---- part 2: a real server --------------------------------------------------------------------


def heartbeat(group: str, member_id: str, epoch: int, topics: list[str] | None = None) -> ConsumerGroupHeartbeatRequest:
    if epoch == 0:
        return ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=0,
                                             rebalance_timeout_ms=60_000, subscribed_topic_names=topics,
                                             topic_partitions=[])
    return ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch)


async def create_topics(wire: Wire, names: list[str]) -> None:
    topic = CreateTopicsRequest.CreatableTopic
    for start in range(0, len(names), 100):
        await wire.request(ApiKey.CREATE_TOPICS, CreateTopicsRequest(timeout_ms=60_000, topics=[
            topic(name=n, num_partitions=PARTITIONS_PER_TOPIC, replication_factor=1, assignments=[], configs=[])
            for n in names[start:start + 100]]))


async def join(wire: Wire, group: str, topics: list[str]) -> tuple[str, int]:
    response = await wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, heartbeat(group, "", 0, topics), 0)
    assert response.error_code == 0, response
    return response.member_id, response.member_epoch


async def scenario(port: int, members: int, topics: int, seconds: float) -> list[float]:
    names = [f"big-{i:04d}" for i in range(topics)]
    admin = await Wire.connect("127.0.0.1", port)
    await create_topics(admin, [*names, "small"])
    wires = [await Wire.connect("127.0.0.1", port) for _ in range(JOIN_CONNECTIONS)]

    async def join_some(wire: Wire, count: int) -> list[tuple[str, int]]:
        return [await join(wire, "big", names) for _ in range(count)]

    per = [members // JOIN_CONNECTIONS + (1 if i < members % JOIN_CONNECTIONS else 0) for i in range(JOIN_CONNECTIONS)]
    batches = await asyncio.gather(*(join_some(w, n) for w, n in zip(wires, per, strict=True)))
    joined = [m for batch in batches for m in batch]
    small = await Wire.connect("127.0.0.1", port)
    small_id, small_epoch = await join(small, "small", ["small"])
    stop = time.monotonic() + seconds
    latencies: list[float] = []

    async def churn() -> None:
        wire, i = wires[0], 0
        while time.monotonic() < stop:
            member_id, _epoch = joined[i % len(joined)]
            await wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, heartbeat("big", member_id, -1), 0)
            joined[i % len(joined)] = await join(wire, "big", names)
            i += 1
            await asyncio.sleep(CHURN_EVERY_S)

    async def small_group() -> None:
        nonlocal small_epoch
        while time.monotonic() < stop:
            started = time.perf_counter()
            response = await small.request(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                           heartbeat("small", small_id, small_epoch), 0)
            latencies.append((time.perf_counter() - started) * 1000)
            if response.error_code == 0:
                small_epoch = response.member_epoch
            await asyncio.sleep(0.005)

    await asyncio.gather(churn(), small_group())
    for wire in [admin, small, *wires]:
        await wire.close()
    return latencies


def run_mode(offload: bool, members: int, topics: int, seconds: float, extra: tuple[str, ...] = ()) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="offload-bench-") as data:
        server = local_server(Path(data), f"group.consumer.assignor.offload.enable={'true' if offload else 'false'}",
                              "flush.policy=interval", "log.level=WARNING", *extra).start()
        port = server.port
        try:
            server.wait_ready()
            try:
                return asyncio.run(scenario(port, members, topics, seconds))
            except Exception:
                print(server.log_tail())
                raise
        finally:
            server.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--skip-job-costs", action="store_true")
    parser.add_argument("--interval-ms", type=int, default=None,
                        help="group.consumer.assignment.interval.ms (default: the server's, 1000; 0: no batching)")
    args = parser.parse_args()
    if not args.skip_job_costs:
        costs = job_costs(args.members, args.topics)
        print(f"one run, {args.members} members x {args.topics} topics x {PARTITIONS_PER_TOPIC} partitions "
              f"(on the loop: build + apply; pickling in the pool's feeder thread):")
        print("  " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in costs.items()))
    failed = False
    for offload in (True, False):
        extra = (() if args.interval_ms is None
                 else ("--override", f"group.consumer.assignment.interval.ms={args.interval_ms}"))
        latencies = run_mode(offload, args.members, args.topics, args.seconds, extra)
        p50, p99, worst = percentile(latencies, 0.5), percentile(latencies, 0.99), max(latencies)
        print(f"offload {'on ' if offload else 'off'}: small-group heartbeat round trip over {len(latencies)} "
              f"requests: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {worst:.1f} ms, "
              f"mean {statistics.mean(latencies):.1f}")
        if offload and p99 >= TARGET_P99_MS:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
