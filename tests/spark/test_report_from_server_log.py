"""The group-history report over a log the real server wrote while kafka-python clients ran a script.

Scenario on one group and a 4-partition topic: a static member joins (generation 1), a dynamic
member joins (2), a dynamic member in a child process joins (3); commits; the static member
restarts within its session timeout (replaced, no rebalance); the child is SIGKILLed and its
session expires (4); the dynamic member leaves with a KIP-800 reason (5); a last commit.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from spark_jobs.decode import decode_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

GROUP, TOPIC = "report-scenario", "orders"
LEAVE_REASON = "scenario: scaling down"
# The member that gets killed runs librdkafka in a child process (SIGKILL takes the whole client).
CHILD = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "client.id": "doomed",
                  "enable.auto.commit": False, "session.timeout.ms": 3000, "heartbeat.interval.ms": 500})
    c.subscribe([sys.argv[3]])
    told = False
    while True:
        c.poll(0.1)
        if c.assignment() and not told:
            print("assigned", flush=True)
            told = True
""")


class _Member:
    """A kafka-python consumer that its own thread polls without pause; other threads ask it for things.

    kafka-python 3.0.12 drops a JoinGroup/SyncGroup round that completes while no poll() waits on it
    and starts a new one (join_group_async replaces a finished join task instead of taking its
    result). Polling several members one after another from one thread meets that whenever the
    leader's round waits on a peer's poll: the leader re-joins for ever and commits are refused
    with REBALANCE_IN_PROGRESS. A member polled continuously leaves no such window.
    """

    def __init__(self, bootstrap: str, client_id: str, instance: str | None = None, session_ms: int = 10_000):
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, client_id=client_id,
                                      group_instance_id=instance, enable_auto_commit=False,
                                      auto_offset_reset="earliest", session_timeout_ms=session_ms,
                                      heartbeat_interval_ms=500, max_poll_interval_ms=60_000)
        # The topic known before the first join, or the leader rejoins when its metadata arrives and
        # kafka-python 3.0.12 can lose that rejoin (see kafka_python_member in tests/clients/test_group_acceptance.py).
        self.consumer.partitions_for_topic(TOPIC)
        self.consumer.subscribe([TOPIC])
        self._calls: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"member-{client_id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                action, result, last = self._calls.get_nowait()
            except queue.Empty:
                self.consumer.poll(timeout_ms=100)
                continue
            try:
                result.set_result(action(self.consumer))
            except BaseException as exc:  # handed to the caller
                result.set_exception(exc)
            if last:
                return

    def call(self, action, timeout_s: float = 60.0, last: bool = False):
        """Runs ``action(consumer)`` on the member's thread; its result or exception.

        ``last``: the thread ends after it (no poll may follow a leave: it would join again)."""
        result: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((action, result, last))
        return result.result(timeout_s)

    def partitions(self) -> list[int]:
        return sorted(tp.partition for tp in self.call(lambda c: c.assignment()))

    def close(self, reason: str | None = None) -> None:
        """Close the consumer; with a ``reason``, leave the group first with that KIP-800 reason.

        (kafka-python's close() leaves without a reason; the coordinator call it wraps takes one.)"""
        def leave_and_close(consumer) -> None:
            if reason is not None:
                consumer._coordinator.maybe_leave_group(reason=reason)
            consumer.close()

        if self._thread.is_alive():
            self.call(leave_and_close, last=True)


def _wait_until(done, members: list[_Member], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError("the group did not settle: " + repr([m.partitions() for m in members]))
        time.sleep(0.1)


def _covers_all(members: list[_Member], partitions: int = 4) -> bool:
    return sorted(p for m in members for p in m.partitions()) == list(range(partitions))


def _commit_owned(member: _Member, offset: int) -> int:
    """Commit ``offset`` on every partition it owns; returns how many records that wrote.

    A commit refused mid-rebalance writes nothing; the member's thread completes the rebalance; retry."""
    from kafka import TopicPartition
    from kafka.errors import CommitFailedError, RebalanceInProgressError
    from kafka.structs import OffsetAndMetadata

    def commit(consumer) -> int:
        owned = consumer.assignment()
        consumer.commit({TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(offset, "", -1) for tp in owned})
        return len(owned)

    deadline = time.monotonic() + 60
    while True:
        try:
            return member.call(commit)
        except (RebalanceInProgressError, CommitFailedError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory, request):
    """Runs the scenario once; yields (data_dir, facts the test checks against)."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    from tests.conftest import local_server

    # server_factory is function-scoped; a module-scoped server is started the same way by hand.
    server = local_server(tmp_path_factory.mktemp("scenario"), "group.initial.rebalance.delay.ms=0",
                          "group.min.session.timeout.ms=1000").start()
    child = None
    members: list[_Member] = []
    try:
        server.wait_ready()
        bootstrap = server.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(TOPIC, 4, 1)])
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        for i in range(200):
            producer.send(TOPIC, value=b"x", partition=i % 4)
        producer.flush()
        producer.close()

        commits = 0
        a = _Member(bootstrap, "static-a", instance="static-a")
        members = [a]
        _wait_until(lambda: _covers_all([a]), members)                                    # generation 1
        b = _Member(bootstrap, "dynamic-b", session_ms=6000)
        members.append(b)
        _wait_until(lambda: _covers_all([a, b]) and all(m.partitions() for m in (a, b)), members)  # 2
        child = subprocess.Popen([sys.executable, "-c", CHILD, bootstrap, GROUP, TOPIC], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        child_assigned = threading.Event()
        threading.Thread(target=lambda: child.stdout.readline() and child_assigned.set(), daemon=True).start()
        _wait_until(lambda: child_assigned.is_set() and all(m.partitions() for m in (a, b)), members)  # 3
        commits += _commit_owned(a, 10) + _commit_owned(b, 10)
        commits += _commit_owned(a, 20)

        # KIP-345: a static member that closes sends no LeaveGroup; back within its session it is replaced.
        a.close()
        members.remove(a)
        a = _Member(bootstrap, "static-a", instance="static-a")
        members.append(a)
        _wait_until(lambda: bool(a.partitions()), members)
        commits += _commit_owned(a, 30)

        os.killpg(child.pid, signal.SIGKILL)                                                # 4, after 3 s
        child.wait(10)
        _wait_until(lambda: _covers_all([a, b]), members)
        b.close(reason=LEAVE_REASON)                                                        # 5
        members.remove(b)
        _wait_until(lambda: _covers_all([a]), members)
        commits += _commit_owned(a, 40)

        # What the live coordinator answers (OffsetFetch, and the one member left: the static one).
        from kafka import TopicPartition

        live_offsets = a.call(lambda c: {(TOPIC, p): c.committed(TopicPartition(TOPIC, p)) for p in range(4)})
        live_members = [a.call(lambda c: c._coordinator._generation.member_id)]
        live_state = "Stable"
        a.close()
        members.remove(a)
        admin.close()
    finally:
        for m in members:
            m.close()
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(10)
        server.stop()
    # The server's own account of the generations, from its structlog events (independent of the log).
    generations = 0
    for line in server.log_path.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        generations += event.get("event") == "join_completed" and event.get("group_id") == GROUP
    yield server.data_dir, {"commits": commits, "server_generations": generations, "live_offsets": live_offsets,
                     "live_members": live_members, "live_state": live_state}


@pytest.fixture(scope="module")
def report(scenario, spark_session, tmp_path_factory):
    from spark_jobs.group_history import build_report

    out = tmp_path_factory.mktemp("report")
    started = time.monotonic()
    summary = build_report(spark_session, scenario[0], out)
    print(f"report over the scenario log: {time.monotonic() - started:.1f}s")
    return out, summary


def test_report_counts_the_scenarios_rebalances_with_their_triggers_and_reasons(report, scenario):
    _out, summary = report
    group = summary["per_group"][GROUP]
    triggers = [g["trigger"] for g in group["generations"]]
    # kafka-python's leader may re-join once more when topic metadata arrives after its first assignment
    # (trigger "rejoin": nobody joined or left); every scripted event must be there, in order.
    assert [t for t in triggers if t != "rejoin"] == ["initial", "member_joined", "member_joined", "member_expired",
                                                      "member_left"], triggers
    assert group["rebalances"] == scenario[1]["server_generations"] == len(triggers)
    assert [g["reason"] for g in group["generations"] if g["trigger"] == "member_left"] == [LEAVE_REASON]
    assert summary["rebalances"]["reasons"] == {LEAVE_REASON: 1}


def test_report_counts_the_static_replacement_as_absorbed_without_a_rebalance(report, spark_session):
    out, summary = report
    assert summary["per_group"][GROUP]["static_replacements"] == 1
    instances = spark_session.read.parquet(str(out / "churn_by_instance")).collect()
    assert [(r.group_instance_id, r.replacements_absorbed, r.rebalances_caused) for r in instances] == [
        ("static-a", 1, 0)]
    events = spark_session.read.parquet(str(out / "membership_events")).collect()
    by_event = sorted((r.event, r.client_id) for r in events)
    assert ("expired", "doomed") in by_event and ("left", "dynamic-b") in by_event
    assert ("static_replaced", "static-a") in by_event


def test_report_counts_every_commit_the_clients_made(report, scenario):
    _out, summary = report
    assert summary["per_group"][GROUP]["commits"] == scenario[1]["commits"]
    assert summary["offsets"]["commit_records"] == scenario[1]["commits"]


def test_current_state_after_compaction_matches_what_the_live_coordinator_reported(report, scenario,
                                                                                    spark_session):
    out, _ = report
    facts = scenario[1]
    offsets = spark_session.read.parquet(str(out / "current_offsets")).collect()
    assert {(r.topic, r.topic_partition): r.committed_offset for r in offsets} == facts["live_offsets"]
    # Lag against the topic partitions in the same data dir: 50 records each, committed at 40.
    assert {r.lag for r in offsets} == {10}
    groups = spark_session.read.parquet(str(out / "current_groups")).collect()
    assert [(r.group_id, r.state, sorted(r.member_ids)) for r in groups] == [
        (GROUP, facts["live_state"], facts["live_members"])]


def test_report_writes_a_summary_parquet_views_and_a_self_contained_html_page(report, scenario):
    out, _summary = report
    assert json.loads((out / "summary.json").read_text())["rebalances"]["total"] == scenario[1]["server_generations"]
    for view in ("rebalance_timeline", "rebalances_per_hour", "top_groups", "membership_events",
                 "churn_by_member", "churn_by_instance", "commits_per_minute", "offset_progress",
                 "current_offsets", "current_groups"):
        assert list((out / view).glob("*.parquet")), view
    page = (out / "report.html").read_text()
    for section in ("rebalances-over-time", "rebalance-durations", "membership-churn", "commit-rate", "timeline",
                    "current-state", "transactional-commits"):
        assert f'id="{section}"' in page
    assert page.count("<svg") >= 5
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing fetched at view time


def test_an_exported_copy_of_the_segments_reads_the_same_records(scenario, spark_session, tmp_path):
    from spark_jobs.reader import read_log

    data_dir = scenario[0]
    source = data_dir / next(p.name for p in data_dir.iterdir() if p.name.startswith("__consumer_offsets-")
                             and any(p.glob("*.log")) and any(r["group_id"] == GROUP for r in decode_rows(p)))
    export = tmp_path / "copied-from-prod"
    export.mkdir()
    for segment in source.glob("*.log"):
        shutil.copy(segment, export / segment.name)
    partition = int(source.name.rsplit("-", 1)[1])
    copied = read_log(spark_session, export, partition=partition).drop("segment").collect()
    original = read_log(spark_session, source).drop("segment").collect()
    assert copied == original and len(copied) > 0
