"""A log written by a real consumer-protocol group (KIP-848) reads back fully both ways: every record
decoded by `groupcoord log dump` (types 3-8 by name, nothing unknown) and by the Spark reader.

Two confluent-kafka members (`group.protocol=consumer`) share a topic against the real server, commit
what they read and leave; then the group is deleted, so the log holds values and tombstones of
every consumer group record type (3-8), offset commits and their tombstones.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from coordinator.records import REGISTRY, RecordType

from ..conftest import REPO_ROOT
from .test_consumer_protocol import LOG, SERVER_SETTINGS, consumer_config, create_topic, produce

# A JVM start and the whole report job under a shared machine's load: more than a client test's time.
pytestmark = [pytest.mark.clients, pytest.mark.timeout(600)]

MESSAGES = 60
GROUP = "kip848-log"
CONSUMER_GROUP_TYPES = range(RecordType.CONSUMER_GROUP_METADATA,
                             RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT + 1)
RECORD_LINE = re.compile(r"^\| offset: \d+ .*?headers: \d+ (?P<name>\w+) "
                         r"key\(type (?P<type>\d+)\): .* value(?P<rest>.*)$")


def read_all_and_commit(members: list[Consumer], topic: str, timeout_s: float = 90.0) -> int:
    """Poll the members in turn until the group has read every message and each member has committed
    what it read. A commit can meet STALE_MEMBER_EPOCH while an assignment changes (the member learns
    its new epoch on its next heartbeat): it is kept and tried again on the next round."""
    read = 0
    pending: list[dict[int, int]] = [{} for _ in members]  # per member: partition -> offset to commit
    deadline = time.monotonic() + timeout_s
    while read < MESSAGES or any(pending):
        assert time.monotonic() < deadline, f"read {read} of {MESSAGES} messages, {pending} uncommitted"
        for member, uncommitted in zip(members, pending, strict=True):
            msg = member.poll(0.1)
            if msg is not None and not msg.error():
                read += 1
                uncommitted[msg.partition()] = msg.offset() + 1
            if uncommitted:
                try:
                    member.commit(offsets=[TopicPartition(topic, p, o) for p, o in uncommitted.items()],
                                  asynchronous=False)
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError.STALE_MEMBER_EPOCH:
                        raise
                else:
                    uncommitted.clear()
    return read


def delete_group(bootstrap: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    try:
        deadline = time.monotonic() + 30
        while True:  # the last leave may still be settling (NON_EMPTY_GROUP): try again shortly
            try:
                admin.delete_consumer_groups([group])[group].result(10)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        del admin


def test_log_dump_and_spark_reader_decode_every_record_a_consumer_protocol_group_wrote(server_factory, topic_name,
                                                                                       tmp_path):
    server = server_factory(*SERVER_SETTINGS)
    create_topic(server.bootstrap, topic_name)
    produce(server.bootstrap, topic_name, range(MESSAGES))
    members = [Consumer(consumer_config(server.bootstrap, GROUP, "consumer")) for _ in range(2)]
    try:
        for member in members:
            member.subscribe([topic_name])
        assert read_all_and_commit(members, topic_name) == MESSAGES
    finally:
        for member in members:
            member.close()  # leaves the group: member epoch -1, the member's records tombstoned
    delete_group(server.bootstrap, GROUP)  # the group's remaining records and its offsets tombstoned
    assert server.stop() == 0
    data_dir = server.data_dir

    # ---- groupcoord log dump: every record of __consumer_offsets described by its type's name
    result = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", str(data_dir)],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    offsets_lines = _offsets_topic_record_lines(result.stdout)
    assert offsets_lines, "no __consumer_offsets records in the dump"
    described = [RECORD_LINE.match(line) for line in offsets_lines]
    assert all(described), [line for line, m in zip(offsets_lines, described, strict=True) if not m][:5]
    assert not [line for line in offsets_lines if "Unknown" in line or "cannot describe" in line]
    seen = Counter((int(m["type"]), m["rest"].startswith(": tombstone")) for m in described if m)
    for m in described:
        assert m is not None and m["name"] == REGISTRY[int(m["type"])].name
    for record_type in CONSUMER_GROUP_TYPES:
        assert seen[(record_type, False)] > 0, f"no value of record type {record_type} in the dump: {seen}"
        assert seen[(record_type, True)] > 0, f"no tombstone of record type {record_type} in the dump: {seen}"
    assert seen[(RecordType.OFFSET_COMMIT, False)] > 0 and seen[(RecordType.OFFSET_COMMIT, True)] > 0

    # ---- the Spark reader (local[1]): the same records, every one decoded, none unknown
    pytest.importorskip("pyspark", reason="the spark extra is installed by `make test`")
    from spark_jobs.group_history import build_report
    from spark_jobs.reader import local_session, read_log

    spark = local_session("local[1]", app_name="groupcoord-kip848-log", **{"spark.sql.shuffle.partitions": "1"})
    try:
        rows = read_log(spark, data_dir).collect()
        # The report's read (commits summarized, group metadata as history) and the report job itself.
        report_kinds = Counter(r["kind"] for r in read_log(spark, data_dir, commits="summary", groups="history")
                               .select("kind").collect())
        summary = build_report(spark, data_dir, tmp_path / "report")
    finally:
        spark.stop()
    consumer_kinds = {REGISTRY[t].kind for t in CONSUMER_GROUP_TYPES}
    assert consumer_kinds <= set(report_kinds) and "unknown" not in report_kinds, report_kinds
    assert summary["log"]["records"] == len(offsets_lines)
    assert consumer_kinds <= set(summary["log"]["by_kind"]) and "unknown" not in summary["log"]["by_kind"], summary
    assert len(rows) == len(offsets_lines)
    assert Counter((r["record_type"], r["tombstone"]) for r in rows) == seen
    assert not [r for r in rows if r["kind"] == "unknown"]
    for r in rows:
        schema = REGISTRY[r["record_type"]]
        assert r["kind"] == schema.kind and r["group_id"] == GROUP, r
        if schema.member_attr is not None:
            assert r["member_id"], r
        if r["record_type"] in CONSUMER_GROUP_TYPES:
            assert (r["value_json"] is None) == r["tombstone"], r
        elif r["kind"] == "offset_commit" and not r["tombstone"]:
            assert r["topic"] == topic_name and 0 < r["committed_offset"] <= MESSAGES, r
    subscriptions = [r["value_json"] for r in rows
                     if r["record_type"] == RecordType.CONSUMER_GROUP_MEMBER_METADATA and not r["tombstone"]]
    assert subscriptions and all(f'"SubscribedTopicNames":["{topic_name}"]' in s for s in subscriptions)


def _offsets_topic_record_lines(dump_text: str) -> list[str]:
    """The record lines of the dump's `__consumer_offsets-N` segments."""
    lines, in_offsets = [], False
    for line in dump_text.splitlines():
        if line.startswith("Dumping "):
            in_offsets = "/__consumer_offsets-" in line
        elif in_offsets and line.startswith("| offset:"):
            lines.append(line)
    return lines
