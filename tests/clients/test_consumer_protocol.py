"""Real clients on the consumer group protocol (KIP-848, `group.protocol=consumer`).

confluent-kafka (librdkafka) consumers, each polling in its own thread, share a 6-partition topic
through server-side assignment while a classic-protocol group reads the same topic on the same
server. Every on_assign / on_revoke / on_lost is logged with a monotonic timestamp, so the tests
can check afterwards that no two members of a group ever owned a partition at the same time, and
that each message was read only inside its reader's ownership of the partition.

Members commit synchronously after every batch and, for the partitions they give up, inside
on_revoke: a partition handed over in a rebalance is never read twice. Only a partition *lost*
(the member fenced without giving it back), or given back after a failed commit, may be read again
from the last commit on, the at-least-once promise; the tests expect neither to happen.

1. three members scale to six and back to three while messages keep arriving;
2. the server is restarted (SIGTERM, and SIGKILL) in the middle of 10,000 messages: the members
   keep going in the same group with the same member ids, and the commits made before it are kept.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]

PARTITIONS = 6
MESSAGES = 10_000
LOG = logging.getLogger("librdkafka")

# KIP-848 timings a test can afford (Kafka's minimums are 45 s / 5 s, hence the lowered bounds).
SERVER_SETTINGS = (
    "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500",
    "group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000",
    "group.initial.rebalance.delay.ms=0",
)


# ---------------------------------------------------------------- what the members saw


@dataclass(frozen=True, slots=True)
class Event:
    at: float  # time.monotonic(): one clock for every thread
    member: str
    kind: str  # assign | revoke | lost | closed
    partitions: tuple[int, ...]


@dataclass(slots=True)
class Interval:
    member: str
    start: float
    end: float
    ended_by: str


class Timeline:
    """Ownership changes of one group, from its members' callbacks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[Event] = []

    def add(self, member: str, kind: str, partitions: Iterable[int]) -> None:
        event = Event(time.monotonic(), member, kind, tuple(sorted(partitions)))
        with self.lock:
            self.events.append(event)

    def owners(self) -> dict[int, str]:
        """Who owns each partition now (partitions nobody owns are left out)."""
        owner: dict[int, str] = {}
        with self.lock:
            for e in self.events:
                for p in e.partitions:
                    if e.kind == "assign":
                        owner[p] = e.member
                    elif owner.get(p) == e.member:
                        del owner[p]
        return owner

    def intervals(self) -> dict[int, list[Interval]]:
        """Per partition, who owned it from when to when; still open ones end now."""
        open_: dict[tuple[str, int], float] = {}
        out: dict[int, list[Interval]] = {p: [] for p in range(PARTITIONS)}
        with self.lock:
            events = list(self.events)
        for e in events:
            for p in e.partitions:
                if e.kind == "assign":
                    open_.setdefault((e.member, p), e.at)
                elif (e.member, p) in open_:
                    out[p].append(Interval(e.member, open_.pop((e.member, p)), e.at, e.kind))
        now = time.monotonic()
        for (member, p), start in open_.items():
            out[p].append(Interval(member, start, now, "still open"))
        return out

    def overlaps(self) -> list[str]:
        found = []
        for p, spans in self.intervals().items():
            spans.sort(key=lambda s: s.start)
            for i, later in enumerate(spans):
                for earlier in spans[:i]:
                    if earlier.member != later.member and later.start < earlier.end:
                        found.append(f"partition {p}: {later.member} from {later.start:.3f} while {earlier.member} "
                                     f"held it until {earlier.end:.3f} ({earlier.ended_by})")
        return found

    def count(self, kind: str) -> int:
        with self.lock:
            return sum(1 for e in self.events if e.kind == kind)


class Member(threading.Thread):
    """One consumer in its own thread: reads in batches, commits synchronously after each batch and
    in on_revoke for what it gives up; `pause_s` after a non-empty batch slows it down."""

    def __init__(self, name: str, config: dict, topic: str, timeline: Timeline, batch: int = 200,
                 pause_s: float = 0.0) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = Consumer(config)
        self.topic, self.timeline, self.batch, self.pause_s = topic, timeline, batch, pause_s
        self.stop_event = threading.Event()
        self.owned: set[int] = set()
        self.consumed: list[tuple[int, int, bytes]] = []  # (partition, offset, value), in order read
        self.outside_ownership: list[tuple[int, int]] = []
        self.pending: dict[int, int] = {}  # partition -> next offset not yet committed
        self.commit_times: list[float] = []  # monotonic time of each successful commit
        self.commit_failures: list[str] = []
        self.errors: list[str] = []
        # Partitions given up with reads not committed (lost, or a failed commit in on_revoke): the next
        # owner may read those again, as at-least-once allows.
        self.dropped: set[int] = set()

    # callbacks run in this thread, inside consume()
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.timeline.add(self.name, "assign", [tp.partition for tp in partitions])
        self.owned |= {tp.partition for tp in partitions}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        revoked = {tp.partition for tp in partitions}
        self._commit(revoked)  # before the hand-over, so the next owner starts after what we read
        self._drop(revoked)
        self.timeline.add(self.name, "revoke", revoked)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        lost = {tp.partition for tp in partitions}
        self.dropped |= lost
        self._drop(lost)
        self.timeline.add(self.name, "lost", lost)

    def _drop(self, partitions: set[int]) -> None:
        self.owned -= partitions
        for p in partitions:
            if self.pending.pop(p, None) is not None:  # no longer ours to commit
                self.dropped.add(p)

    def run(self) -> None:
        self.consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_lost)
        try:
            while not self.stop_event.is_set():
                messages = self.consumer.consume(self.batch, 0.2)
                for msg in messages:
                    if msg.error():
                        self.errors.append(str(msg.error()))
                        continue
                    p, o = msg.partition(), msg.offset()
                    if p not in self.owned:
                        self.outside_ownership.append((p, o))
                    self.consumed.append((p, o, msg.value()))
                    self.pending[p] = o + 1
                if self.pending:
                    self._commit(set(self.pending))
                if messages and self.pause_s:
                    time.sleep(self.pause_s)
            self._commit(set(self.pending))
        finally:
            self.consumer.close()  # leaves the group (consumer protocol: epoch -1)
            self.timeline.add(self.name, "closed", self.owned)

    def _commit(self, partitions: set[int]) -> None:
        offsets = {p: self.pending[p] for p in partitions & self.owned if p in self.pending}
        if not offsets:
            return
        try:
            result = self.consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                                          asynchronous=False)
            failed = [f"{tp.partition}: {tp.error}" for tp in result or [] if tp.error is not None]
            if failed:
                raise KafkaException(", ".join(failed))
        except KafkaException as exc:  # e.g. the coordinator restarting: kept pending, tried again next batch
            self.commit_failures.append(str(exc))
            return
        self.commit_times.append(time.monotonic())
        for p, o in offsets.items():
            if self.pending.get(p) == o:
                del self.pending[p]

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def stop_all(members: list[Member]) -> None:
    """Stop members at once (each close() waits for its leave heartbeat)."""
    for member in members:
        member.stop_event.set()
    for member in members:
        member.stop()


# ---------------------------------------------------------------- helpers


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Seconds it took; fails the test after `timeout_s`."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout_s:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)
    return time.monotonic() - start


def produce(bootstrap: str, topic: str, values: range, rate_per_s: float | None = None) -> None:
    """Message i goes to partition i % PARTITIONS with value str(i); `rate_per_s` spreads them out."""
    producer = Producer({"bootstrap.servers": bootstrap, "logger": LOG, "linger.ms": 5})
    started = time.monotonic()
    for n, i in enumerate(values):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
        if n % 100 == 99:
            producer.poll(0)
            if rate_per_s:
                time.sleep(max(0.0, started + (n + 1) / rate_per_s - time.monotonic()))
    assert producer.flush(30) == 0


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(20)
    finally:
        del admin


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "logger": LOG})
    try:
        return {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        probe.close()


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """What a fresh consumer-protocol member of the group reads back (OffsetFetch v9)."""
    checker = Consumer(consumer_config(bootstrap, group, "consumer"))
    try:
        committed = checker.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
    finally:
        checker.close()
    return {tp.partition: tp.offset for tp in committed}


def describe(bootstrap: str, group: str):  # -> confluent_kafka.ConsumerGroupDescription
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    try:
        return admin.describe_consumer_groups([group], include_authorized_operations=True)[group].result(20)
    finally:
        del admin


def consumer_config(bootstrap: str, group: str, protocol: str) -> dict:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "logger": LOG, "group.protocol": protocol,
              "socket.timeout.ms": 10_000}
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    return config


def read_exactly_once(members: list[Member], ends: dict[int, int]) -> list[str]:
    """What is wrong with the group's reads: gaps, or repeats a hand-over does not excuse."""
    problems = []
    counts = Counter((p, o) for m in members for p, o, _ in m.consumed)
    missing = [(p, o) for p, end in ends.items() for o in range(end) if (p, o) not in counts]
    if missing:
        problems.append(f"{len(missing)} messages never read, e.g. {missing[:5]}")
    excused = {p for m in members for p in m.dropped}
    repeated = sorted(tp for tp, n in counts.items() if n > 1 and tp[0] not in excused)
    if repeated:
        problems.append(f"{len(repeated)} messages read twice after clean hand-overs, e.g. {repeated[:5]}")
    return problems


def assert_group_read_everything(members: list[Member], timeline: Timeline, ends: dict[int, int]) -> None:
    assert timeline.overlaps() == []
    assert [(m.name, tp) for m in members for tp in m.outside_ownership] == []
    assert read_exactly_once(members, ends) == []
    assert [e for m in members for e in m.errors] == []


# ---------------------------------------------------------------- 1. scaling


def test_three_members_scale_to_six_and_back_while_a_classic_group_reads_the_same_topic(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    bootstrap = server.bootstrap
    create_topic(bootstrap, topic_name)
    group, classic_group = f"kip848-{topic_name}", f"classic-{topic_name}"
    timeline, classic_timeline = Timeline(), Timeline()
    members: list[Member] = []
    classic: list[Member] = []
    started = time.monotonic()

    def start(name: str, into: list[Member], group_id: str, protocol: str, line: Timeline) -> Member:
        member = Member(name, consumer_config(bootstrap, group_id, protocol), topic_name, line)
        into.append(member)
        member.start()
        return member

    def owned_by(names: set[str], each: int) -> Callable[[], bool]:
        def check() -> bool:
            owners = timeline.owners()
            per_member = Counter(owners.values())
            return len(owners) == PARTITIONS and set(per_member) == names and set(per_member.values()) == {each}
        return check

    # ~25 s of messages: the group changes size while they arrive.
    producer = threading.Thread(target=produce, args=(bootstrap, topic_name, range(MESSAGES), 400), daemon=True)
    try:
        first = [start(f"m{i}", members, group, "consumer", timeline) for i in range(3)]
        for i in range(2):
            start(f"c{i}", classic, classic_group, "classic", classic_timeline)
        settle_3 = wait_until(owned_by({"m0", "m1", "m2"}, 2), 30, "three members owning two partitions each")
        producer.start()

        wait_until(lambda: sum(len(m.consumed) for m in members) >= MESSAGES // 10, 30, "the first messages read")
        scale_up_at = time.monotonic()
        more = [start(f"m{i}", members, group, "consumer", timeline) for i in range(3, 6)]
        settle_6 = wait_until(owned_by({f"m{i}" for i in range(6)}, 1), 30, "six members owning one partition each")
        assert len(describe(bootstrap, group).members) == 6
        # Six members read for a while before three leave.
        wait_until(lambda: sum(len(m.consumed) for m in members) >= 2 * MESSAGES // 5, 60, "4,000 messages read")

        scale_down_at = time.monotonic()
        stop_all(first)
        settle_back = wait_until(owned_by({"m3", "m4", "m5"}, 2), 30, "the three remaining members owning two each")
        producer.join(60)
        assert not producer.is_alive()

        ends = end_offsets(bootstrap, topic_name)
        wait_until(lambda: len({(p, o) for m in members for p, o, _ in m.consumed}) == MESSAGES
                   and len({(p, o) for m in classic for p, o, _ in m.consumed}) == MESSAGES,
                   60, "every message read by both groups")
        description = describe(bootstrap, group)
        stop_all(more + classic)
        committed = committed_offsets(bootstrap, group, topic_name)
    finally:
        stop_all([m for m in members + classic if m.is_alive()])

    assert sum(ends.values()) == MESSAGES
    assert_group_read_everything(members, timeline, ends)
    assert_group_read_everything(classic, classic_timeline, ends)
    assert committed == ends
    assert {v for m in members for _, _, v in m.consumed} == {str(i).encode() for i in range(MESSAGES)}
    # Messages were read by each phase's members: before, during and after the group changed size.
    assert all(m.consumed for m in members) and all(m.consumed for m in classic)
    assert all(m.commit_times for m in members)
    # A commit racing a reconciliation may carry the epoch the member is just leaving (Kafka answers
    # STALE_MEMBER_EPOCH; the offsets stay pending and go with the next commit): allowed, nothing else.
    unexpected = [f for m in members for f in m.commit_failures if "STALE_MEMBER_EPOCH" not in f]
    assert unexpected == [], unexpected
    assert timeline.count("lost") == 0
    assert (description.group_id, description.is_simple_consumer_group, len(description.members)) == \
        (group, False, 3)
    assert {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE} <= set(description.authorized_operations)
    print(f"\nscaling: 3 members settled in {settle_3:.2f}s; 3->6 in {settle_6:.2f}s "
          f"(from {scale_up_at - started:.1f}s); 6->3 in {settle_back:.2f}s (from {scale_down_at - started:.1f}s); "
          f"{timeline.count('assign')} assignments, {timeline.count('revoke')} revocations, "
          f"{timeline.count('lost')} losses; read by m0-m2 {sum(len(m.consumed) for m in first)}, "
          f"m3-m5 {sum(len(m.consumed) for m in more)}; "
          f"total {time.monotonic() - started:.1f}s")


# ---------------------------------------------------------------- 2. server restart


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_server_restart_in_the_middle_keeps_the_group_going_with_its_offsets(server_factory, topic_name, sig):
    server = server_factory(*SERVER_SETTINGS)
    bootstrap = server.bootstrap
    create_topic(bootstrap, topic_name)
    group, classic_group = f"kip848-{topic_name}", f"classic-{topic_name}"
    timeline, classic_timeline = Timeline(), Timeline()
    produce(bootstrap, topic_name, range(MESSAGES // 2))
    # ~1,000 messages/s for the group: the restart comes while it is still reading the first half.
    members = [Member(f"m{i}", consumer_config(bootstrap, group, "consumer"), topic_name, timeline, batch=20,
                      pause_s=0.05) for i in range(3)]
    classic = [Member("c0", consumer_config(bootstrap, classic_group, "classic"), topic_name, classic_timeline,
                      batch=20, pause_s=0.05)]
    started = time.monotonic()
    try:
        for member in members + classic:
            member.start()
        wait_until(lambda: len(timeline.owners()) == PARTITIONS and len(set(timeline.owners().values())) == 3,
                   30, "three members owning every partition")
        wait_until(lambda: sum(len(m.consumed) for m in members) >= MESSAGES // 5, 30, "2,000 messages read")
        before = describe(bootstrap, group)
        committed_before = committed_offsets(bootstrap, group, topic_name)

        down_at = time.monotonic()
        if sig == signal.SIGTERM:
            assert server.stop() == 0
        else:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            server.stop()  # closes the log file; nothing is left to signal
        stopped_in = time.monotonic() - down_at
        read_when_down = sum(len(m.consumed) for m in members)
        server.start()
        server.wait_ready()
        ready_at = time.monotonic()
        # Reads may go on from what the members had fetched; a commit needs the coordinator back.
        resumed = wait_until(lambda: any(t > ready_at for m in members for t in m.commit_times), 30,
                             "a commit accepted by the restarted server")
        after = describe(bootstrap, group)
        for member in members + classic:
            member.pause_s = 0.0  # the rest at full speed

        produce(bootstrap, topic_name, range(MESSAGES // 2, MESSAGES))
        ends = end_offsets(bootstrap, topic_name)
        wait_until(lambda: len({(p, o) for m in members for p, o, _ in m.consumed}) == MESSAGES
                   and len({(p, o) for m in classic for p, o, _ in m.consumed}) == MESSAGES,
                   60, "every message read by both groups")
        stop_all(members + classic)
        committed = committed_offsets(bootstrap, group, topic_name)
    finally:
        stop_all([m for m in members + classic if m.is_alive()])

    assert sum(ends.values()) == MESSAGES
    assert_group_read_everything(members, timeline, ends)
    assert_group_read_everything(classic, classic_timeline, ends)
    assert committed == ends
    # Commits made before the restart were kept: every later commit was at or beyond them.
    assert all(committed[p] >= o for p, o in committed_before.items())
    # The same group and the same members (their sessions outlive the restart), no partition lost.
    assert sorted(m.member_id for m in after.members) == sorted(m.member_id for m in before.members)
    assert timeline.count("lost") == 0
    print(f"\nrestart ({sig.name}): stopped in {stopped_in:.2f}s, down {ready_at - down_at:.2f}s, first commit "
          f"{resumed:.2f}s after ready; "
          f"{read_when_down} of {MESSAGES} read when it went down; "
          f"{sum(len(m.commit_failures) for m in members)} failed commits; "
          f"{timeline.count('assign')} assignments, {timeline.count('revoke')} revocations; "
          f"total {time.monotonic() - started:.1f}s")
