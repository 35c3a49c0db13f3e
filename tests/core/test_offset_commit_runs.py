"""Offset commits as runs of columns: the same records, the same state, whichever way they are taken."""

from __future__ import annotations

from coordinator.core import GroupShard, Outcome, RequestContext, RequestRef
from coordinator.records import OffsetCommitRun, RecordsToWrite, offset_commit_record
from protocol.messages import OffsetCommitRequest

Topic, Partition = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition


def _shard() -> GroupShard:
    return GroupShard(new_uuid=lambda: "id")


def _commit(shard: GroupShard) -> Outcome:
    request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        Topic(name="a", partitions=[Partition(partition_index=p, committed_offset=10 + p, committed_leader_epoch=p,
                                              committed_metadata="m" * p) for p in range(3)]),
        Topic(name="b", partitions=[Partition(partition_index=7, committed_offset=1)])])
    return shard.offset_commit(request, RequestContext(9, 1000, RequestRef(1)))


def test_a_run_holds_the_records_a_record_at_a_time_commit_writes() -> None:
    out = _commit(_shard())
    writes = out.records
    assert isinstance(writes, RecordsToWrite) and writes.records == []
    runs: list[OffsetCommitRun] = writes.runs
    assert [(run.topic, run.partitions) for run in runs] == [("a", [0, 1, 2]), ("b", [7])]
    expected = [offset_commit_record("g", "a", p, 10 + p, p, "m" * p, 1000) for p in range(3)]
    expected.append(offset_commit_record("g", "b", 7, 1, -1, "", 1000))
    assert len(writes) == 4
    assert writes.columns() == ([r.key for r in expected], [r.value for r in expected])
    assert list(writes) == expected
    assert [r.decoded for r in out.records] == [r.decoded for r in expected]


def test_replaying_runs_leaves_the_state_replaying_their_records_does() -> None:
    by_runs, by_records = _shard(), _shard()
    by_runs.replay_all(_commit(by_runs).records)  # a RecordsToWrite: its runs replayed as columns
    for record in list(_commit(by_records).records):  # the same records, one by one
        by_records.replay(record)
    assert by_runs.state.offsets == by_records.state.offsets and len(by_runs.state.offsets["g"]) == 4
    assert set(by_runs.state.groups) == set(by_records.state.groups) == {"g"}
