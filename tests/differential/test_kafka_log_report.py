"""`groupcoord report` (the Spark job, local[1]) over Apache Kafka's own __consumer_offsets segments.

A scripted history runs against the session's Kafka oracle: a classic group goes through its
rebalances (a joins; b joins; b leaves; a leaves) with commits in between, and a consumer-protocol
(KIP-848) group joins and commits. The expected figures come from the script's own answers (the
generations it was given, the partitions each OffsetCommit acknowledged), never from the report.
Then the report runs as an operator would, `groupcoord report --log-dir ... --master local[1]`, over a
copy of Kafka's segments: every record decodes (no `unknown` kind), and the report's per-group
rebalances and commits (its Parquet views) match the history.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from coordinator.records import REGISTRY, RecordType
from protocol import messages as m
from protocol.api_keys import ApiKey as K
from protocol.error_codes import ErrorCode as E
from tests.conftest import REPO_ROOT
from tests.differential.conversations import (
    assignment,
    await_assignable,
    commit,
    create_topics,
    join,
    join_one,
    subscription,
    sync,
)
from tests.differential.harness import Side
from tests.kafka_oracle import KafkaOracle

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


class History:
    """What the script saw: each group's generations completed and commits acknowledged."""

    def __init__(self) -> None:
        self.generations: dict[str, set[int]] = {}
        self.commits: dict[str, int] = {}
        self.members: dict[str, str] = {}  # connection -> member id

    def committed(self, s: Side, connection: str, request: m.OffsetCommitRequest) -> None:
        response = s.call(connection, K.OFFSET_COMMIT, 9, request)
        acknowledged = sum(1 for t in response.topics for p in t.partitions if p.error_code == E.NONE)
        self.commits[request.group_id] = self.commits.get(request.group_id, 0) + acknowledged

    def synced(self, s: Side, connection: str, request: m.SyncGroupRequest) -> None:
        assert s.call(connection, K.SYNC_GROUP, 5, request).error_code == E.NONE
        self.generations.setdefault(request.group_id, set()).add(request.generation_id)


def classic_history(s: Side, topic: str, h: History) -> str:
    group = s.name_of("report-classic")
    meta = [("range", subscription(topic))]
    a = join_one(s, group, "a", protocols=meta)                                     # generation 1: a alone
    h.synced(s, "a", sync(group, a.generation_id, a.member_id, {a.member_id: assignment(topic, 0, 1, 2)}))
    h.committed(s, "a", commit(group, topic, {0: 5, 1: 6, 2: 7}, a.generation_id, a.member_id))
    first_b = s.call("b", K.JOIN_GROUP, 9, join(group, protocols=meta))
    assert first_b.error_code == E.MEMBER_ID_REQUIRED
    b_join = s.send("b", K.JOIN_GROUP, 9, join(group, member_id=first_b.member_id, protocols=meta))
    s.await_state(group, "PreparingRebalance")
    a = s.call("a", K.JOIN_GROUP, 9, join(group, member_id=a.member_id, protocols=meta))  # generation 2
    b = s.receive(b_join)
    assert a.generation_id == b.generation_id == 2, (a, b)
    h.members.update(a=a.member_id, b=b.member_id)
    h.synced(s, "a", sync(group, a.generation_id, a.member_id, {a.member_id: assignment(topic, 0, 1),
                                                                 b.member_id: assignment(topic, 2)}))
    h.synced(s, "b", sync(group, b.generation_id, b.member_id))
    h.committed(s, "a", commit(group, topic, {0: 10, 1: 11}, a.generation_id, a.member_id))
    h.committed(s, "b", commit(group, topic, {2: 12}, b.generation_id, b.member_id))
    h.committed(s, "b", commit(group, topic, {2: 13}, a.generation_id - 1, b.member_id))  # ILLEGAL_GENERATION
    s.call("b", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=group, members=[
        m.LeaveGroupRequest.MemberIdentity(member_id=b.member_id, reason="scaling down")]))
    a = s.call("a", K.JOIN_GROUP, 9, join(group, member_id=a.member_id, protocols=meta))  # generation 3
    assert a.generation_id == 3, a
    h.synced(s, "a", sync(group, a.generation_id, a.member_id, {a.member_id: assignment(topic, 0, 1, 2)}))
    h.committed(s, "a", commit(group, topic, {0: 20, 1: 21, 2: 22}, a.generation_id, a.member_id))
    s.call("a", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=group, members=[
        m.LeaveGroupRequest.MemberIdentity(member_id=a.member_id)]))
    # The last member gone: Kafka completes the rebalance at once, with a new, empty generation.
    h.generations[group].add(a.generation_id + 1)
    return group


def consumer_history(s: Side, topic: str, h: History) -> str:
    group = s.name_of("report-cg")
    Hb = m.ConsumerGroupHeartbeatRequest
    member = "report-member-0000000000"
    joined = s.call("a", K.CONSUMER_GROUP_HEARTBEAT, 1, Hb(
        group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic], server_assignor="uniform", topic_partitions=[]))
    assert joined.error_code == E.NONE, joined
    h.committed(s, "a", commit(group, topic, {0: 1, 1: 2, 2: 3}, joined.member_epoch, member))
    h.committed(s, "a", commit(group, topic, {0: 4}, joined.member_epoch, member))
    s.call("a", K.CONSUMER_GROUP_HEARTBEAT, 1, Hb(group_id=group, member_id=member, member_epoch=-1))
    return group


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(str(path)).to_pylist()


def test_report_over_kafkas_log_matches_the_history(kafka_oracle: KafkaOracle, tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="the spark extra is installed by `make test`")
    token = uuid.uuid4().hex[:8]
    h = History()
    side = Side("kafka", kafka_oracle.host, kafka_oracle.port, token)
    try:
        (topic,) = create_topics(side, "report")
        await_assignable(side, topic)
        classic = classic_history(side, topic, h)
        consumer = consumer_history(side, topic, h)
    finally:
        side.close()
    assert h.generations[classic] == {1, 2, 3, 4} and h.commits == {classic: 9, consumer: 4}, vars(h)

    # A copy: the session's broker keeps appending to its active segment.
    (partition_dir,) = kafka_oracle.offsets_partition_dirs()
    log_copy = tmp_path / "log" / partition_dir.name
    shutil.copytree(partition_dir, log_copy)
    out = tmp_path / "report"
    report = subprocess.run([sys.executable, "-m", "coordinator", "report", "--log-dir", str(log_copy),
                             "--out", str(out), "--master", "local[1]"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=500)
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    by_kind = summary["log"]["by_kind"]
    assert "unknown" not in by_kind and by_kind.get("offset_commit") and by_kind.get("group_metadata"), by_kind
    # The KIP-848 records Kafka 4 writes, read with Kafka's value versions and tagged fields (it no
    # longer writes partition metadata, type 4: KIP-1101 keeps a hash in the group's metadata instead).
    consumer_kinds = {REGISTRY[t].kind for t in (
        RecordType.CONSUMER_GROUP_METADATA, RecordType.CONSUMER_GROUP_MEMBER_METADATA,
        RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
        RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)}
    assert consumer_kinds <= set(by_kind), by_kind

    timeline = [r for r in _parquet_rows(out / "rebalance_timeline") if r["group_id"] == classic]
    assert sorted(r["generation"] for r in timeline) == sorted(h.generations[classic]), timeline
    by_generation = {r["generation"]: r for r in timeline}
    # Who came and went, from the member lists. Kafka writes no record of a LeaveGroup's reason (the
    # reason records are groupcoord's own, type 30000), so the report cannot tell b's leave from an
    # expiry over Kafka's log: b is gone from generation 3 either way, with no reason.
    assert by_generation[2]["joined"] == [h.members["b"]], by_generation[2]
    gone = (by_generation[3]["left"] or []) + (by_generation[3]["expired"] or [])
    assert gone == [h.members["b"]] and by_generation[3]["reason"] is None, by_generation[3]
    assert by_generation[4]["member_count"] == 0, by_generation[4]
    commits: dict[str, int] = {}
    for r in _parquet_rows(out / "offset_progress"):  # one row per group, topic and partition
        if r["group_id"] in (classic, consumer):
            commits[r["group_id"]] = commits.get(r["group_id"], 0) + r["commits"]
    assert commits == h.commits, commits
