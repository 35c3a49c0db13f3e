"""Synthetic but realistic coordinator logs, in the real on-disk format, of any size.

    python -m spark_jobs.generate OUT_DIR --records 10000000 [--groups 2000] [--partitions 8] [--seed 1]

Writes what a server's data dir holds: `__consumer_offsets-N/%020d.log` segments (Kafka record
batches v2 built by `coordinator.log.batch.build_batch`, records by the `coordinator.records`
factories) and, per consumed topic partition, a `TOPIC-N/` log whose end offset is ahead of the
committed offsets, so lag can be measured. Each group is simulated as the server would write it:

- a rebalance writes a GroupMetadata record when the leader's SyncGroup arrives (generation + 1,
  currentStateTimestamp = when the join phase completed); a JoinGroup/LeaveGroup carrying a
  KIP-800 reason writes our ClassicGroupReason record when it arrives;
- a member's session expiring writes nothing until the next generation's record;
- a static member restarting within its session timeout rewrites GroupMetadata with the same
  generation and a new member id (KIP-345: no rebalance);
- commits write one OffsetCommit record per partition in one batch; rarely a group is deleted
  (tombstones) or offsets of a partition are deleted;
- every member removal writes its cause record (type 30000 value version 1): left, session
  expired, removed by an admin, as the server does since issue 20;
- one group in four speaks the consumer protocol (KIP-848, `_ConsumerSim`): joins and leaves bump
  the group epoch (records 5 and 3), an assignor run writes the targets (7) and the assignment
  epoch (6), sometimes for several epochs at once (KIP-1263 batching), and each member writes its
  current assignment (8) when it has reconciled; members leave (-1), expire, or, static ones, leave
  for a while (-2) and come back as a new member id; half the groups hold a classic member (mixed)
  that an admin removes now and then.

Groups go to partitions by Kafka's hash (`partition_for`); partitions are generated in parallel.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import structlog

from coordinator.log.batch import build_batch
from coordinator.log.segment import segment_name
from coordinator.records import (
    GroupReason,
    Record,
    RemovalCause,
    group_metadata_record,
    group_metadata_tombstone,
    group_reason_record,
    group_reason_tombstone,
    member_removal_record,
    offset_commit_record,
    offset_commit_tombstone,
    partition_for,
)
from coordinator.records.consumer import (
    assignment_epoch_record,
    consumer_group_epoch_record,
    current_assignment_record,
    member_removal_tombstones,
    member_subscription_record,
    target_assignment_record,
)
from protocol.messages import GroupMetadataValue
from protocol.primitives import Uuid

log = structlog.get_logger(__name__)

SEGMENT_BYTES = 100 * 1024 * 1024  # Kafka's offsets.topic.segment.bytes default
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: fixed, so a seed gives the same bytes

JOIN_REASONS = ("need to re-join with the given member-id: {m}",
                "rebalance failed due to 'The group is rebalancing, so a rejoin is needed.' "
                "(RebalanceInProgressException)",
                "Updating metadata: subscribed topics changed")
LEAVE_REASONS = ("the consumer is being closed", "the consumer unsubscribed from all topics",
                 "consumer poll timeout has expired.")


@dataclass(slots=True)
class SimMember:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int


@dataclass(slots=True)
class SimGroup:
    group_id: str
    topic: str
    topic_partitions: int
    protocol: str
    rng: random.Random
    members: dict[str, SimMember] = field(default_factory=dict)
    generation: int = 0
    leader: str | None = None
    committed: dict[int, int] = field(default_factory=dict)
    produced: dict[int, int] = field(default_factory=dict)  # the topic's log end per partition
    rate_per_s: float = 100.0
    next_member: int = 0
    statics: int = 0

    def new_member(self, static: bool) -> SimMember:
        self.next_member += 1
        n = self.next_member
        instance = None
        if static:
            self.statics += 1
            instance = f"{self.group_id}-instance-{self.statics}"
        return SimMember(f"consumer-{self.group_id}-{n}-{self.rng.getrandbits(48):012x}", instance,
                         f"consumer-{self.group_id}-{n}", f"/10.0.{n % 250}.{self.rng.randrange(1, 250)}",
                         self.rng.choice((10_000, 30_000, 45_000)), 300_000)

    def metadata_value(self, join_completed_ms: int) -> GroupMetadataValue:
        members = list(self.members.values())
        return GroupMetadataValue(
            protocol_type="consumer", generation=self.generation,
            protocol=self.protocol if members else None, leader=self.leader if members else None,
            current_state_timestamp=join_completed_ms,
            members=[GroupMetadataValue.MemberMetadata(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.host,
                rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
                subscription=b"\x00\x01" + self.topic.encode(), assignment=self.assignment_of(i, len(members)))
                for i, m in enumerate(members)])

    def assignment_of(self, index: int, count: int) -> bytes:
        return bytes(p for p in range(self.topic_partitions) if p % count == index)

    def owned(self, member_index: int) -> list[int]:
        count = len(self.members)
        return [p for p in range(self.topic_partitions) if p % count == member_index]


class PartitionWriter:
    """Appends batches to one `__consumer_offsets-N` directory, rolling segments at SEGMENT_BYTES."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.next_offset = 0
        self.records = 0
        # The writer holds its segment open across appends (no with-block can span them); close() ends it.
        self.file = open(directory / segment_name(0), "wb")  # noqa: SIM115
        self.size = 0

    def append(self, records: list[Record], timestamp_ms: int) -> None:
        batch = build_batch([(r.key, r.value) for r in records], base_offset=self.next_offset, timestamp=timestamp_ms)
        if self.size and self.size + len(batch) > SEGMENT_BYTES:
            self.file.close()
            self.file = open(self.directory / segment_name(self.next_offset), "wb")  # noqa: SIM115
            self.size = 0
        self.file.write(batch)
        self.size += len(batch)
        self.next_offset += len(records)
        self.records += len(records)

    def close(self) -> None:
        self.file.close()


@dataclass(slots=True)
class PartitionResult:
    partition: int
    records: int
    groups: int
    topic_ends: dict[str, dict[int, int]]


def _simulate_partition(out_dir: str, partition: int, group_ids: list[str], target_records: int, seed: int,
                        topics: int) -> PartitionResult:
    rng = random.Random(seed * 1_000_003 + partition)
    writer = PartitionWriter(Path(out_dir) / f"__consumer_offsets-{partition}")
    groups: dict[str, SimGroup] = {}
    consumer: dict[str, _ConsumerSim] = {}
    for gid in group_ids:
        g_rng = random.Random(f"{seed}/{gid}")
        topic_n = g_rng.randrange(topics)
        g = SimGroup(gid, f"topic-{topic_n}", 4 + topic_n % 9, g_rng.choice(("range", "cooperative-sticky")), g_rng)
        g.rate_per_s = g_rng.choice((5.0, 50.0, 500.0))
        groups[gid] = g
        if g_rng.random() < CONSUMER_PROTOCOL_SHARE:
            consumer[gid] = _ConsumerSim(g)
    # Every group has a next-event time; the partition's log interleaves them in time order.
    queue: list[tuple[int, str]] = [(START_MS + rng.randrange(60_000), gid) for gid in group_ids]
    heapq.heapify(queue)
    pending: list[tuple[int, int, list[Record]]] = []  # (time, seq, records) written later (sync after join)
    seq = 0
    topic_ends: dict[str, dict[int, int]] = {}

    def flush_due(now: int) -> None:
        while pending and pending[0][0] <= now:
            t, _, recs = heapq.heappop(pending)
            writer.append(recs, t)

    def later(t: int, recs: list[Record]) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(pending, (t, seq, recs))

    while writer.records < target_records and queue:
        now, gid = heapq.heappop(queue)
        flush_due(now)
        g = groups[gid]
        sim = consumer.get(gid)
        next_at = _step(g, now, writer, later) if sim is None else sim.step(now, writer, later)
        heapq.heappush(queue, (next_at, gid))
    flush_due(1 << 62)
    writer.close()
    for g in groups.values():
        ends = topic_ends.setdefault(g.topic, {})
        for p in range(g.topic_partitions):
            ends[p] = max(ends.get(p, 0), g.produced.get(p, 0))
    return PartitionResult(partition, writer.records, len(groups), topic_ends)


def _commit(g: SimGroup, partitions: list[int], now: int, writer: PartitionWriter) -> int:
    """A member commits what it owns, in one batch; returns when the group's next event is due."""
    rng = g.rng
    recs = []
    for p in partitions:
        end = g.produced.get(p, 0) + int(g.rate_per_s * rng.uniform(0.5, 10))
        g.produced[p] = end
        offset = max(g.committed.get(p, 0), end - rng.randrange(0, 50))
        g.committed[p] = offset
        recs.append(offset_commit_record(g.group_id, g.topic, p, offset, rng.randrange(0, 3), "", now))
    if recs:
        writer.append(recs, now)
    return now + rng.randrange(200, 5000)


def _rebalance(g: SimGroup, now: int, later, join_ms: int) -> int:  # type: ignore[no-untyped-def]
    """Generation + 1 after a join phase of ``join_ms``; the record lands when the leader syncs."""
    g.generation += 1
    g.leader = next(iter(g.members), None)
    join_completed = now + join_ms
    synced = join_completed + g.rng.randrange(2, 200)
    later(synced, [group_metadata_record(g.group_id, g.metadata_value(join_completed))])
    return synced


def _step(g: SimGroup, now: int, writer: PartitionWriter, later) -> int:  # type: ignore[no-untyped-def]
    """One event of group ``g`` at ``now``; returns when its next event is due."""
    rng = g.rng
    if not g.members:  # (re)start the group: one to five members join, some static
        for _ in range(rng.randint(1, 5)):
            m = g.new_member(static=rng.random() < 0.4)
            g.members[m.member_id] = m
        synced = _rebalance(g, now, later, rng.randrange(3000, 3300))  # group.initial.rebalance.delay.ms
        return synced + rng.randrange(1000, 5000)
    r = rng.random()
    if r < 0.93:  # commit: one member commits what it owns, in one batch
        members = list(g.members)
        return _commit(g, g.owned(rng.randrange(len(members))), now, writer)
    if r < 0.950:  # a new dynamic member joins (it says why: KIP-800)
        m = g.new_member(static=False)
        writer.append([group_reason_record(g.group_id, GroupReason(
            "JoinGroup", m.member_id, None, rng.choice(JOIN_REASONS).format(m=m.member_id), now))], now)
        g.members[m.member_id] = m
        return _rebalance(g, now, later, rng.randrange(20, 3000)) + 10
    if r < 0.965:  # a member leaves, with a reason (KIP-800) or without (LeaveGroup < v5), or an admin removes it
        m = g.members.pop(rng.choice(list(g.members)))
        text = rng.choice((*LEAVE_REASONS, None))
        cause = RemovalCause.REMOVED if rng.random() < 0.1 else RemovalCause.LEFT
        writer.append([member_removal_record(g.group_id, "LeaveGroup", m.member_id, m.instance_id, cause, text,
                                             now)], now)
        return _rebalance(g, now, later, rng.randrange(20, 3000)) + 10
    if r < 0.975:  # a member dies: its session expires later, which the cause record tells
        m = g.members.pop(rng.choice(list(g.members)))
        expiry = now + m.session_timeout_ms
        later(expiry, [member_removal_record(g.group_id, "Timer", m.member_id, m.instance_id,
                                             RemovalCause.SESSION_EXPIRED, None, expiry)])
        return _rebalance(g, expiry, later, rng.randrange(20, 3000)) + 10
    if r < 0.995:  # a static member restarts within its session timeout: same generation, new member id
        statics = [m for m in g.members.values() if m.instance_id]
        if not statics:
            return now + 100
        old = rng.choice(statics)
        new = g.new_member(static=False)
        new.instance_id, new.session_timeout_ms = old.instance_id, old.session_timeout_ms
        g.members = {(new.member_id if k == old.member_id else k): (new if k == old.member_id else v)
                     for k, v in g.members.items()}
        if g.leader == old.member_id:
            g.leader = new.member_id
        rejoined = now + rng.randrange(5_000, 20_000)  # process restart time, within the session timeout
        later(rejoined, [member_removal_record(g.group_id, "JoinGroup", old.member_id, old.instance_id,
                                               RemovalCause.REPLACED, None, rejoined),
                         group_metadata_record(g.group_id, g.metadata_value(now))])
        return rejoined + 1000
    if r < 0.998:  # an operator deletes the offsets of one partition
        p = rng.randrange(g.topic_partitions)
        if p in g.committed:
            del g.committed[p]
            writer.append([offset_commit_tombstone(g.group_id, g.topic, p)], now)
        return now + 1000
    # everyone leaves, then the group is deleted (tombstones) and later starts again from scratch
    writer.append([member_removal_record(g.group_id, "LeaveGroup", m.member_id, m.instance_id, RemovalCause.LEFT,
                                         None, now) for m in g.members.values()], now)
    g.members.clear()
    synced = _rebalance(g, now, later, rng.randrange(20, 500))
    tombs = [offset_commit_tombstone(g.group_id, g.topic, p) for p in sorted(g.committed)]
    tombs += [group_metadata_tombstone(g.group_id), group_reason_tombstone(g.group_id)]
    later(synced + 60_000, tombs)
    g.committed.clear()
    g.generation = 0
    return synced + 120_000


CONSUMER_PROTOCOL_SHARE = 0.25  # of the groups speak the consumer protocol (KIP-848)
#: Bumped when the same seed gives other records (2: consumer-protocol groups and cause records), so
#: that a kept benchmark log of an older generator is written again.
GENERATOR_VERSION = 2


@dataclass(slots=True)
class _ClassicMeta:
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(slots=True)
class _ConsumerMember:
    """A KIP-848 member as the record factories read it (`ConsumerMemberLike`)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    classic: _ClassicMeta | None = None
    rack_id: str | None = None
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = 300_000
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = 0
    assigned_partitions: dict[Uuid, list[int]] = field(default_factory=dict)
    partitions_pending_revocation: dict[Uuid, list[int]] = field(default_factory=dict)


class _ConsumerSim:
    """A consumer-protocol group of `SimGroup` ``g`` (its topic, commits and clock), written as the
    server writes KIP-848 groups (docs/spec/consumer-protocol.md#records)."""

    def __init__(self, g: SimGroup) -> None:
        self.g = g
        self.topic_id = Uuid(int=g.rng.getrandbits(128))
        self.members: dict[str, _ConsumerMember] = {}
        self.epoch = 0
        self.mixed = g.rng.random() < 0.5  # one member of the group speaks the classic protocol

    def _new_member(self, static: bool, classic: bool = False) -> _ConsumerMember:
        m = self.g.new_member(static)
        meta = _ClassicMeta(m.session_timeout_ms, (("range", b"\x00\x03"),)) if classic else None
        return _ConsumerMember(m.member_id, m.instance_id, m.client_id, m.host, (self.g.topic,), meta,
                               rack_id=f"rack-{self.g.rng.randrange(3)}")

    def _bump(self) -> Record:
        self.epoch += 1
        return consumer_group_epoch_record(self.g.group_id, self.epoch)

    def _run(self, now: int, later) -> int:  # type: ignore[no-untyped-def]
        """An assignor run for the current epoch (partition p to the p mod n-th member), the
        targets and the assignment epoch; each member reconciles a little later."""
        gid, ids = self.g.group_id, sorted(self.members)
        landed = now + self.g.rng.randrange(1, 50)
        records = []
        for index, member_id in enumerate(ids):
            target = {self.topic_id: [p for p in range(self.g.topic_partitions) if p % len(ids) == index]}
            records.append(target_assignment_record(gid, member_id, target))
        records.append(assignment_epoch_record(gid, self.epoch, landed))
        later(landed, records)
        done = landed
        for index, member_id in enumerate(ids):
            member = self.members[member_id]
            member.previous_member_epoch, member.member_epoch = member.member_epoch, self.epoch
            member.assigned_partitions = {self.topic_id: [p for p in range(self.g.topic_partitions)
                                                          if p % len(ids) == index]}
            reconciled = landed + self.g.rng.randrange(5, 3000)
            later(reconciled, [current_assignment_record(gid, member)])
            done = max(done, reconciled)
        return done

    def _join(self, now: int, later, count: int) -> int:  # type: ignore[no-untyped-def]
        """``count`` members join within a moment; one run covers all their epochs (KIP-1263)."""
        records = []
        for _ in range(count):
            classic = self.mixed and not any(m.classic for m in self.members.values())
            member = self._new_member(static=self.g.rng.random() < 0.3, classic=classic)
            self.members[member.member_id] = member
            records += [member_subscription_record(self.g.group_id, member), self._bump()]
        later(now, records)
        return self._run(now + self.g.rng.randrange(0, 500), later)

    def _remove(self, now: int, later, member: _ConsumerMember, api: str, cause: RemovalCause) -> int:  # type: ignore[no-untyped-def]
        del self.members[member.member_id]
        later(now, [member_removal_record(self.g.group_id, api, member.member_id, member.instance_id, cause, None,
                                          now), *member_removal_tombstones(self.g.group_id, member.member_id),
                    self._bump()])
        return self._run(now, later) if self.members else now

    def step(self, now: int, writer: PartitionWriter, later) -> int:  # type: ignore[no-untyped-def]
        g, rng = self.g, self.g.rng
        if not self.members:
            return self._join(now, later, rng.randint(1, 4)) + rng.randrange(1000, 5000)
        r = rng.random()
        if r < 0.93:  # commits, with the member epoch as the generation
            member = self.members[sorted(self.members)[rng.randrange(len(self.members))]]
            return _commit(g, list(member.assigned_partitions.get(self.topic_id, ())), now, writer)
        if r < 0.95:
            return self._join(now, later, rng.choice((1, 1, 2, 3))) + 10
        member = self.members[rng.choice(sorted(self.members))]
        if r < 0.965:  # it leaves (-1), or a classic member's LeaveGroup (an admin's, now and then)
            if member.classic is not None:
                cause = RemovalCause.REMOVED if rng.random() < 0.5 else RemovalCause.LEFT
                return self._remove(now, later, member, "LeaveGroup", cause) + 10
            return self._remove(now, later, member, "ConsumerGroupHeartbeat", RemovalCause.LEFT) + 10
        if r < 0.975:  # it dies: the session expires
            expiry = now + 45_000
            return self._remove(expiry, later, member, "Timer", RemovalCause.SESSION_EXPIRED) + 10
        if r < 0.995 and member.instance_id is not None:  # a static member leaves for a while (-2) and comes back
            gid = g.group_id
            left = replace(member, member_epoch=-2)
            later(now, [current_assignment_record(gid, left),
                        member_removal_record(gid, "ConsumerGroupHeartbeat", member.member_id, member.instance_id,
                                              RemovalCause.STATIC_LEFT, None, now)])
            back = now + rng.randrange(5_000, 20_000)
            # as the server's replace_static_member: the successor starts at epoch 0 with the target
            successor = replace(member, member_id=g.new_member(False).member_id, member_epoch=0,
                                previous_member_epoch=0)
            del self.members[member.member_id]
            self.members[successor.member_id] = successor
            later(back, [member_removal_record(gid, "ConsumerGroupHeartbeat", member.member_id, member.instance_id,
                                               RemovalCause.REPLACED, None, back),
                         *member_removal_tombstones(gid, member.member_id),
                         member_subscription_record(gid, successor),
                         target_assignment_record(gid, successor.member_id, successor.assigned_partitions),
                         current_assignment_record(gid, successor)])
            return back + 1000
        return now + 100


def _write_topic_logs(out_dir: Path, ends: dict[str, dict[int, int]]) -> None:
    """One batch per topic partition, placed so the partition's log end offset is `end` (+ a little lag)."""
    for topic, partitions in ends.items():
        for p, end in partitions.items():
            directory = out_dir / f"{topic}-{p}"
            directory.mkdir(parents=True, exist_ok=True)
            last = max(end, 1) + 25  # consumers trail the producers a little
            batch = build_batch([(None, b"payload")], base_offset=last - 1, timestamp=START_MS)
            (directory / segment_name(last - 1)).write_bytes(batch)


def generate(out_dir: Path | str, records: int, groups: int = 1000, partitions: int = 8, topics: int = 20,
             seed: int = 1, workers: int | None = None) -> dict[str, object]:
    """Write about ``records`` coordinator records (a little more: batches finish) under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    by_partition: dict[int, list[str]] = {p: [] for p in range(partitions)}
    for i in range(groups):
        gid = f"group-{i:05d}"
        by_partition[partition_for(gid, partitions)].append(gid)
    # Record budget per partition in proportion to its groups, so every group gets a similar history.
    jobs = [(str(out), p, gids, max(1, records * len(gids) // groups), seed, topics)
            for p, gids in by_partition.items() if gids]
    workers = workers or min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_simulate_partition, *zip(*jobs, strict=True)))
    else:
        results = [_simulate_partition(*job) for job in jobs]
    ends: dict[str, dict[int, int]] = {}
    for res in results:
        for topic, parts in res.topic_ends.items():
            merged = ends.setdefault(topic, {})
            for p, end in parts.items():
                merged[p] = max(merged.get(p, 0), end)
    _write_topic_logs(out, ends)
    summary = {"out": str(out), "records": sum(r.records for r in results), "groups": groups,
               "partitions": partitions, "seconds": round(time.monotonic() - started, 2)}
    log.info("log_generated", **summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_jobs.generate", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the data dir to write (created)")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=8, help="__consumer_offsets partitions")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    print(json.dumps(generate(args.out, args.records, args.groups, args.partitions, args.topics, args.seed,
                              args.workers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
