"""Server-side assignor benchmark: uniform and range on a large group.

    .venv/bin/python -m tests.bench.assignors            # 15 runs per case
    .venv/bin/python -m tests.bench.assignors --runs 5   # quicker

The shape is Kafka's ServerSideAssignorBenchmark at 1,000 members, 1,000 topics and a
partitions-to-member ratio of 50: 50,000 partitions, 50 per topic.
- homogeneous: every member subscribes to every topic;
- heterogeneous: Kafka's bucketed members, 5 buckets of 200 members, each bucket subscribing to
  its own 200 topics;
- fresh: nobody holds anything yet;
- incremental: 999 members hold the assignor's own previous target and one member joins (in the
  heterogeneous case it joins the first bucket).
Two extra lines have no target: "fresh*" (below) and "overlapping", 10 seeded random subscriptions
of 300 topics each, so that most topics have their own set of subscribers.
The "+racks" lines (no target) run the rack-aware path: members spread over 3 racks, each
partition with replicas on 2 of them (rotating), as on a 3-rack cluster with replication factor 2;
the incremental case starts from the rack-aware previous target. On a single node the racks are
unknown (or all the same) and the plain lines are what runs.

Members with the same subscription share one frozenset, as the coordinator keeps them (interned
when a subscription changes), so comparing subscriptions is an identity check. The last line
times the homogeneous case again with one distinct (equal) frozenset per member, to show what
interning saves.

Each case runs `--runs` times after one warm-up (gc.collect() before each run, the collector
left on as in the server); we print the median and the fastest run in ms, with the target from
the brief where there is one, and exit 1 when a median misses its target.
"""

from __future__ import annotations

import argparse
import functools
import gc
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable

from coordinator.core.assignors import ASSIGNORS, UNKNOWN_RACKS, GroupAssignment, MemberSpec, PartitionRacks

MEMBER_COUNT = 1000
TOPIC_COUNT = 1000
PARTITIONS_PER_TOPIC = 50
BUCKET_COUNT = 5
RACKS = ("rack-0", "rack-1", "rack-2")

Members = dict[str, MemberSpec]
Topics = dict[str, int]

# Targets from the brief (ms, median); None: no target.
TARGETS: dict[tuple[str, str], float] = {
    ("homogeneous", "fresh"): 10.0,
    ("homogeneous", "incremental"): 5.0,
    ("heterogeneous", "fresh"): 20.0,
    ("heterogeneous", "incremental"): 5.0,
}


def topics() -> Topics:
    return {f"topic-{i:04d}": PARTITIONS_PER_TOPIC for i in range(TOPIC_COUNT)}


def subscriptions(kind: str, topic_ids: list[str], interned: bool = True) -> list[frozenset[str]]:
    """One subscription per member index, for MEMBER_COUNT members."""
    if kind == "homogeneous":
        everything = frozenset(topic_ids)
        return [everything if interned else frozenset(topic_ids) for _ in range(MEMBER_COUNT)]
    if kind == "overlapping":
        # Not Kafka's shape: 10 patterns of 300 topics drawn at random (seeded), so most topics
        # have their own set of subscribers. The worst case for grouping topics by subscribers.
        rnd = random.Random(848)
        patterns = [frozenset(rnd.sample(topic_ids, 300)) for _ in range(10)]
        return [patterns[i % len(patterns)] for i in range(MEMBER_COUNT)]
    topics_per_bucket = -(-len(topic_ids) // BUCKET_COUNT)
    members_per_bucket = -(-MEMBER_COUNT // BUCKET_COUNT)
    buckets = [frozenset(topic_ids[b * topics_per_bucket:(b + 1) * topics_per_bucket]) for b in range(BUCKET_COUNT)]
    return [buckets[i // members_per_bucket] for i in range(MEMBER_COUNT)]


def member_id(index: int) -> str:
    return f"member-{index:04d}"


def member_rack(index: int, racks: PartitionRacks) -> str | None:
    return RACKS[index % len(RACKS)] if racks.by_topic else None


def partition_racks() -> PartitionRacks:
    """Partition p of every topic on racks p mod 3 and p + 1 mod 3."""
    on = tuple(frozenset({RACKS[p % 3], RACKS[(p + 1) % 3]}) for p in range(PARTITIONS_PER_TOPIC))
    return PartitionRacks(dict.fromkeys(topics(), on))


def fresh_group(kind: str, interned: bool = True, racks: PartitionRacks = UNKNOWN_RACKS) -> Members:
    subs = subscriptions(kind, sorted(topics()), interned)
    return {member_id(i): MemberSpec(subs[i], member_rack(i, racks)) for i in range(MEMBER_COUNT)}


def incremental_group(kind: str, assignor_name: str, racks: PartitionRacks = UNKNOWN_RACKS) -> Members:
    """999 members holding their previous target; the last member joins with nothing."""
    subs = subscriptions(kind, sorted(topics()))
    stable = {member_id(i): MemberSpec(subs[i], member_rack(i, racks)) for i in range(MEMBER_COUNT - 1)}
    previous = ASSIGNORS[assignor_name].assign(stable, topics(), racks)
    members = {m: MemberSpec(spec.subscribed_topic_ids, spec.rack, current=previous[m]) for m, spec in stable.items()}
    last = MEMBER_COUNT - 1
    members[member_id(last)] = MemberSpec(subs[0], member_rack(last, racks))  # joins the first bucket when bucketed
    return members


def time_runs(run: Callable[[], GroupAssignment], runs: int) -> list[float]:
    run()  # warm-up
    timings = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        run()
        timings.append((time.perf_counter() - start) * 1000)
    return timings


def check(members: Members, topic_counts: Topics, result: GroupAssignment) -> None:
    """Cheap sanity check that the timed result is a full assignment."""
    assigned = sum(len(partitions) for assignment in result.values() for partitions in assignment.values())
    subscribed = frozenset().union(*(spec.subscribed_topic_ids for spec in members.values()))
    assert assigned == sum(topic_counts[topic_id] for topic_id in subscribed), assigned
    assert set(result) == set(members)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per case (default 15)")
    parser.add_argument("--no-racks", action="store_true", help="leave out the rack-aware (+racks) lines")
    args = parser.parse_args(argv)

    topic_counts = topics()
    print(f"assignors: {MEMBER_COUNT:,} members x {TOPIC_COUNT:,} topics x "
          f"{sum(topic_counts.values()):,} partitions; median of {args.runs} runs "
          f"(Python {platform.python_version()}, {platform.machine()})")
    print(f"{'assignor':<9} {'subscriptions':<14} {'case':<12} {'median ms':>10} {'min ms':>8}  target")
    racks = partition_racks()
    cases: list[tuple[str, str, str, Members, PartitionRacks]] = []
    for assignor_name in ("uniform", "range"):
        for kind in ("homogeneous", "heterogeneous"):
            cases.append((assignor_name, kind, "fresh", fresh_group(kind), UNKNOWN_RACKS))
            cases.append((assignor_name, kind, "incremental", incremental_group(kind, assignor_name), UNKNOWN_RACKS))
    cases.append(("uniform", "homogeneous", "fresh*", fresh_group("homogeneous", interned=False), UNKNOWN_RACKS))
    for assignor_name in ("uniform", "range"):
        cases.append((assignor_name, "overlapping", "fresh", fresh_group("overlapping"), UNKNOWN_RACKS))
        cases.append((assignor_name, "overlapping", "incremental", incremental_group("overlapping", assignor_name),
                      UNKNOWN_RACKS))
    if not args.no_racks:
        for assignor_name in ("uniform", "range"):
            for kind in ("homogeneous", "heterogeneous"):
                cases.append((assignor_name, kind, "fresh+racks", fresh_group(kind, racks=racks), racks))
                cases.append((assignor_name, kind, "incr+racks", incremental_group(kind, assignor_name, racks),
                              racks))

    missed = 0
    for assignor_name, kind, case, members, case_racks in cases:
        assign = ASSIGNORS[assignor_name].assign
        check(members, topic_counts, assign(members, topic_counts, case_racks))
        timings = time_runs(functools.partial(assign, members, topic_counts, case_racks), args.runs)
        median = statistics.median(timings)
        target = TARGETS.get((kind, case))
        verdict = "" if target is None else f"<= {target:g} ms {'ok' if median <= target else 'MISSED'}"
        missed += target is not None and median > target
        print(f"{assignor_name:<9} {kind:<14} {case:<12} {median:>10.2f} {min(timings):>8.2f}  {verdict}")
    print("fresh*: every member with its own (equal) subscription frozenset, not interned")
    print("overlapping: 10 random 300-topic subscriptions (no target; most topics have distinct subscribers)")
    if not args.no_racks:
        print("+racks: 3 member racks, each partition on 2 of them (no target; on a single node racks change nothing)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
