"""Share groups (KIP-932) end to end with Kafka's own KafkaShareConsumer (groupcoord.clients.ShareMember):
three members on one 2-partition topic, each acknowledging explicitly and committing every batch.
docs/spec/share-groups.md#real-clients."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from .java_processes import JavaAdmin, JavaProcess, wait_until
from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS = 2
RECORDS = 10_000
LOCK_MS = 5000
RELEASE_MOD = 7  # offset % 7 == 0: released on its first delivery, so delivered a second time
REJECT_MOD = 11  # offset % 11 == 1: rejected, never delivered again


class ShareMember(JavaProcess):
    def __init__(self, bootstrap: str, topic: str, group: str, name: str, log_dir, *config: str) -> None:
        super().__init__("groupcoord.clients.ShareMember", bootstrap, topic, group, name,
                         "request.timeout.ms=15000", "default.api.timeout.ms=20000", *config,
                         name=name, log_dir=log_dir)

    def check(self) -> None:
        errors = self.of("error")
        assert not errors, f"{self.name}: {errors}\n{self.stderr_tail()}"

    def outcomes(self) -> tuple[list[tuple[int, int, int, str]], list[tuple[int, int, int, str]]]:
        """(records whose acknowledgement the broker confirmed, records of a batch left unconfirmed)."""
        confirmed: list[tuple[int, int, int, str]] = []
        pending: list[tuple[int, int, int, str]] = []
        for _, event in list(self.events):
            if event["event"] == "delivered":
                pending = [tuple(r) for r in event["records"]]
            elif event["event"] == "committed":
                ok = set(event["partitions"])
                confirmed += [r for r in pending if r[0] in ok]
                pending = [r for r in pending if r[0] not in ok]
        return confirmed, pending


@pytest.fixture
def java_processes():
    processes: list = []
    yield processes
    for process in reversed(processes):
        process.stop()


def test_three_java_share_consumers_accept_each_record_once(server_factory, java_processes, topic_name, tmp_path):
    server = server_factory(f"group.share.record.lock.duration.ms={LOCK_MS}", "group.share.session.timeout.ms=10000",
                            "group.share.heartbeat.interval.ms=1000")
    admin = JavaAdmin(server.bootstrap, tmp_path)
    java_processes.append(admin)
    admin(f"createTopic {topic_name} {PARTITIONS}")
    group = f"share-{topic_name}"
    admin(f"setGroupConfig {group} share.auto.offset.reset=earliest")
    per_partition = RECORDS // PARTITIONS
    admin(f"produce {topic_name} {','.join([str(per_partition)] * PARTITIONS)}")
    members = [ShareMember(server.bootstrap, topic_name, group, f"share-{i}", tmp_path,
                           f"test.release.mod={RELEASE_MOD}", f"test.reject.mod={REJECT_MOD}") for i in range(3)]
    java_processes.extend(members)

    def delivered_count() -> int:
        for member in members[1:]:
            member.check()
        return sum(len(e["records"]) for m in members for e in m.of("delivered"))

    # a member dies holding records: they come back to the others once their locks expire
    wait_until(lambda: delivered_count() > 2000 or None, 90, delivered_count)
    members[0].kill()
    killed_at = time.monotonic()
    expected = {(p, o) for p in range(PARTITIONS) for o in range(per_partition)}
    rejected = {(p, o) for p, o in expected if o % REJECT_MOD == 1}

    def settled():
        for member in members[1:]:
            member.check()
        accepted = Counter((r[0], r[1]) for m in members for r in m.outcomes()[0] if r[3] == "ACCEPT")
        uncertain = {(r[0], r[1]) for r in members[0].outcomes()[1] if r[3] == "ACCEPT"}
        done = set(accepted) | rejected | uncertain
        return accepted if done >= expected else None

    accepted = wait_until(settled, 120, lambda: len(expected - set(settled() or {})))
    time.sleep(1)  # a late duplicate would show now
    accepted = Counter((r[0], r[1]) for m in members for r in m.outcomes()[0] if r[3] == "ACCEPT")
    assert max(accepted.values()) == 1, [k for k, v in accepted.items() if v > 1][:10]
    assert not set(accepted) & rejected
    deliveries = [tuple(r) for m in members for e in m.of("delivered") for r in e["records"]]
    counts: dict[tuple[int, int], list[int]] = {}
    for p, o, count, _ in deliveries:
        counts.setdefault((p, o), []).append(count)
    for key in rejected:
        assert len(counts.get(key, [])) <= 2, (key, counts.get(key))  # once, or again after the SIGKILL
    released = [k for k in expected if k[1] % RELEASE_MOD == 0 and k[1] % REJECT_MOD != 1]
    for key in released:
        assert max(counts[key]) >= 2, (key, counts[key])  # released, then delivered with a higher count
    # the killed member's unacknowledged records were delivered again, later, with a higher count
    lost = {(r[0], r[1]) for r in members[0].outcomes()[1]}
    later = [r for m in members[1:] for t, e in m.events if e["event"] == "delivered" and t > killed_at
             for r in e["records"] if (r[0], r[1]) in lost]
    assert not lost or later, "the killed member's records never came back"
