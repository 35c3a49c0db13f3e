"""Share groups (KIP-932) end to end with librdkafka's preview share consumer, through its C API
(tests/clients/rdkafka_share_member.py, ctypes over the librdkafka bundled in the confluent-kafka wheel):
explicit acknowledgement by two members of one group on a 2-partition topic (ACCEPT, RELEASE and
REJECT, one member SIGKILLed on the way), and implicit acknowledgement.
docs/spec/share-groups.md#real-clients."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from .java_processes import ShareMemberEvents, wait_until
from .support import CLIENT_TEST_TIMEOUT_S, SHARE_SHORT_TIMEOUTS_ALLOWED

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS = 2
RECORDS = 1_000  # per partition
LOCK_MS = 5000
RELEASE_MOD = 7  # offset % 7 == 0: released on its first delivery, so delivered a second time
REJECT_MOD = 11  # offset % 11 == 1: rejected, never delivered again
MEMBER = [sys.executable, str(Path(__file__).with_name("rdkafka_share_member.py"))]


class RdkafkaShareMember(ShareMemberEvents):
    """tests/clients/rdkafka_share_member.py: one librdkafka share consumer in ``group``."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, log_dir: Path, *config: str) -> None:
        super().__init__([*MEMBER, bootstrap, topic, group, name, *config], name=name, log_dir=log_dir)

    def check(self) -> None:
        super().check()
        assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}\n{self.stderr_tail()}"


@pytest.fixture
def members():
    started: list[RdkafkaShareMember] = []
    yield started
    for member in reversed(started):
        member.stop()


def _prepare(bootstrap: str, topic: str, group: str, records: int = RECORDS) -> None:
    """The topic, the group reading from the earliest offset, and ``records`` records on each partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(20)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(20)
    _produce(bootstrap, topic, range(records))


def _produce(bootstrap: str, topic: str, offsets: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for offset in offsets:
        for partition in range(PARTITIONS):
            producer.produce(topic, f"{partition}-{offset}".encode(), partition=partition)
    assert producer.flush(20) == 0


def _start(members: list, bootstrap: str, topic: str, group: str, name: str, log_dir: Path, *config: str):
    member = RdkafkaShareMember(bootstrap, topic, group, name, log_dir, *config)
    members.append(member)
    return member


def test_librdkafka_share_consumers_accept_release_and_reject_each_record_once(server_factory, members,
                                                                               topic_name, tmp_path):
    server = server_factory(f"group.share.record.lock.duration.ms={LOCK_MS}",
                            *SHARE_SHORT_TIMEOUTS_ALLOWED)
    group = f"share-{topic_name}"
    _prepare(server.bootstrap, topic_name, group)
    explicit = ("test.mode=explicit", f"test.release.mod={RELEASE_MOD}", f"test.reject.mod={REJECT_MOD}",
                "max.poll.records=100")
    doomed = _start(members, server.bootstrap, topic_name, group, "rdkafka-doomed", tmp_path, *explicit,
                    "test.stall.after=1")
    wait_until(lambda: len(doomed.of("delivered")) >= 2, 30, lambda: (doomed.events, doomed.stderr_tail()))
    doomed.kill()  # it holds its second batch, acquired and never acknowledged
    survivors = [_start(members, server.bootstrap, topic_name, group, f"rdkafka-{i}", tmp_path, *explicit)
                 for i in range(2)]
    everyone = [doomed, *survivors]
    expected = {(p, o) for p in range(PARTITIONS) for o in range(RECORDS)}
    rejected = {(p, o) for p, o in expected if o % REJECT_MOD == 1}

    def accepted() -> Counter:
        return Counter((r[0], r[1]) for m in everyone for r in m.outcomes()[0] if r[3] == "ACCEPT")

    def settled() -> Counter | None:
        for member in survivors:
            member.check()
        done = accepted()
        return done if set(done) | rejected >= expected else None

    wait_until(settled, 60, lambda: sorted(expected - rejected - set(accepted()))[:10])
    for member in survivors:
        member.stop()  # a late redelivery would show in their events before they close
    done = accepted()
    assert max(done.values()) == 1, [k for k, v in done.items() if v > 1][:10]
    assert set(done) == expected - rejected
    counts: dict[tuple[int, int], list[int]] = {}
    history: dict[tuple[int, int], list[tuple[str, int, str, float]]] = {}  # for the failure messages
    deliveries = [(t, m.name, e) for m in everyone for t, e in list(m.events) if e["event"] == "delivered"]
    for t, name, e in sorted(deliveries, key=lambda delivery: delivery[0]):
        for p, o, count, kind in e["records"]:
            counts.setdefault((p, o), []).append(count)
            history.setdefault((p, o), []).append((name, count, kind, t))
    held = {(r[0], r[1]) for r in doomed.outcomes()[1]}
    for key in rejected:  # a rejected record is never delivered again
        assert history[key][-1][2] == "REJECT", (key, history[key])
    for key in expected:
        if key[1] % RELEASE_MOD == 0 and key not in held:  # released, then back with count 2
            assert history[key][0][1:3] == (1, "RELEASE") and counts[key][1] == 2, (key, history[key])
    # the SIGKILLed member's acquired records came back (its connection closed: at once, not after the lock)
    assert held and held <= set(done) | rejected
    # every delivery of a record carries a higher count than the one before
    assert all(a < b for c in counts.values() for a, b in itertools.pairwise(c)), counts


def test_librdkafka_share_consumer_accepts_implicitly(server_factory, members, topic_name, tmp_path):
    server = server_factory()
    group = f"share-{topic_name}"
    _prepare(server.bootstrap, topic_name, group)
    member = _start(members, server.bootstrap, topic_name, group, "rdkafka-implicit", tmp_path,
                    "test.mode=implicit")
    expected = {(p, o) for p in range(PARTITIONS) for o in range(RECORDS)}

    def accepted() -> Counter | None:
        member.check()
        done = Counter((r[0], r[1]) for r in member.outcomes()[0])
        return done if set(done) >= expected else None

    wait_until(accepted, 60, lambda: len(expected - set(accepted() or ())))
    member.stop()
    done = Counter((r[0], r[1]) for r in member.outcomes()[0])
    assert set(done) == expected and max(done.values()) == 1
    assert {r[2] for e in member.of("delivered") for r in e["records"]} == {1}


def test_librdkafka_close_applies_the_last_explicit_acknowledgements(server_factory, members, topic_name,
                                                                     tmp_path):
    """librdkafka's close sends the acknowledgements still pending with ShareAcknowledge epoch -1 and,
    concurrently, the leave heartbeat: whichever arrives first, they apply (the share session outlives the
    leave, as in Kafka 4.4; tests/server/test_share_wire.py pins the order where the leave comes first), so
    what it accepted never comes back. docs/spec/share-groups.md#sessions."""
    server = server_factory()
    group = f"share-{topic_name}"
    few = 20
    _prepare(server.bootstrap, topic_name, group, few)
    first = _start(members, server.bootstrap, topic_name, group, "rdkafka-closing", tmp_path, "test.mode=explicit",
                   "test.commit=none", "test.close.after=1")
    wait_until(lambda: first.of("closed"), 30, lambda: (first.events, first.stderr_tail()))
    taken = {(r[0], r[1]) for e in first.of("delivered") for r in e["records"]}
    assert taken and all(r[3] == "ACCEPT" for e in first.of("delivered") for r in e["records"])
    _produce(server.bootstrap, topic_name, range(few, 2 * few))
    second = _start(members, server.bootstrap, topic_name, group, "rdkafka-after", tmp_path, "test.mode=implicit")
    expected = {(p, o) for p in range(PARTITIONS) for o in range(2 * few)}

    def rest() -> set | None:
        second.check()
        got = {(r[0], r[1]) for r in second.outcomes()[0]}
        return got if got | taken >= expected else None

    wait_until(rest, 60, lambda: sorted(expected - taken - {(r[0], r[1]) for r in second.outcomes()[0]})[:10])
    second.stop()
    again = {(r[0], r[1]) for e in second.of("delivered") for r in e["records"]} & taken
    assert not again, sorted(again)[:10]
