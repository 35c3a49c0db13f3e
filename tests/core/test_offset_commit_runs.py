"""Offset commits as runs of columns: the same records, the same state, whichever way they are taken."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.core import GroupConfig, GroupShard, Outcome, RequestContext, RequestRef
from coordinator.core.offsets import java_length
from coordinator.records import OffsetCommitRun, Record, RecordsToWrite, offset_commit_record, offset_commit_run
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.frames import encode_response
from protocol.messages import OffsetCommitRequest, OffsetCommitResponse

Topic, Partition = OffsetCommitRequest.OffsetCommitRequestTopic, OffsetCommitRequest.OffsetCommitRequestPartition
AnswerTopic, Answer = OffsetCommitResponse.OffsetCommitResponseTopic, OffsetCommitResponse.OffsetCommitResponsePartition


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
    assert [run.stored_under for run in runs] == [[("a", 0), ("a", 1), ("a", 2)], [("b", 7)]]
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
    # A later commit's run hands replay the very keys the group's offsets are stored under.
    again = _commit(by_runs).records
    assert isinstance(again, RecordsToWrite)
    stored_keys = {id(key) for key in by_runs.state.offsets["g"]}
    assert all(id(key) in stored_keys for run in again.runs for key in run.stored_under)


# ---- the commit path against a record-at-a-time reference, for any plain commit ------------------

MAX_METADATA = 8  # small, so that too-large metadata comes up often


def _reference(request: OffsetCommitRequest, version: int, now: int) -> tuple[list[Record], bytes]:
    """The records and response bytes of a memberless commit, built one partition at a time the way
    Kafka's GroupMetadataManager.storeOffsets reads: too-large metadata refused per partition, v1
    timestamps, v2-4 retention as an expire timestamp, a new answer object per partition."""
    expire = now + request.retention_time_ms if 2 <= version <= 4 and request.retention_time_ms != -1 else None
    records: list[Record] = []
    topics = []
    for t in request.topics:
        answers = []
        for p in t.partitions:
            metadata = p.committed_metadata or ""
            if java_length(metadata) > MAX_METADATA:
                answers.append(Answer(p.partition_index, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            stamp = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
            records.append(offset_commit_record(request.group_id, t.name, p.partition_index, p.committed_offset,
                                                p.committed_leader_epoch, metadata, stamp, expire))
            answers.append(Answer(p.partition_index, ErrorCode.NONE))
        topics.append(AnswerTopic(name=t.name, partitions=answers))
    return records, encode_response(1, ApiKey.OFFSET_COMMIT, version, OffsetCommitResponse(topics=topics))


_partitions = st.lists(st.builds(
    Partition, partition_index=st.integers(0, 12), committed_offset=st.integers(-1, 2**40),
    committed_leader_epoch=st.integers(-1, 5), commit_timestamp=st.sampled_from([-1, 0, 5_000]),
    committed_metadata=st.one_of(st.none(), st.text(max_size=6), st.text(min_size=7, max_size=12))),
    max_size=6, unique_by=lambda p: p.partition_index)


@settings(max_examples=150, deadline=None)
@given(version=st.integers(0, 9), retention=st.sampled_from([-1, 0, 60_000]),
       topics=st.lists(st.tuples(st.sampled_from(["a", "b", "c.d"]), _partitions), max_size=3,
                       unique_by=lambda t: t[0]))
def test_any_plain_commit_writes_answers_and_replays_as_the_record_at_a_time_reference(
        version: int, retention: int, topics: list[tuple[str, list[Partition]]]) -> None:
    """Each (topic, partition) once: a partition named twice with one of them refused is answered
    per (topic, partition) here, per entry by Kafka (OffsetMetadataManager.commitOffset), as before."""
    request = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                  retention_time_ms=retention,
                                  topics=[Topic(name=name, partitions=parts) for name, parts in topics])
    shard, reference = (GroupShard(GroupConfig(offset_metadata_max_bytes=MAX_METADATA), new_uuid=lambda: "id")
                        for _ in range(2))
    out = shard.offset_commit(request, RequestContext(version, 1000, RequestRef(1)))
    expected_records, expected_bytes = _reference(request, version, 1000)
    assert encode_response(1, ApiKey.OFFSET_COMMIT, version, out.response) == expected_bytes
    written = list(out.records)
    assert [(r.key, r.value) for r in written] == [(r.key, r.value) for r in expected_records]
    assert [r.decoded for r in written] == [r.decoded for r in expected_records]
    shard.replay_all(out.records)
    for record in expected_records:
        reference.replay(record)
    assert shard.state.offsets == reference.state.offsets
    assert set(shard.state.groups) == set(reference.state.groups)


# ---- a run's values against offset_commit_record's, the packed path included ----------------------

_RUN_PARTITIONS = st.lists(st.tuples(
    st.integers(0, 2**31 - 1),
    st.one_of(st.integers(-1, 2**40), st.integers(-(2**64), 2**64)),  # now and then out of an int64's range
    st.one_of(st.integers(-1, 9), st.integers(-(2**32), 2**32)),
    st.one_of(st.just(""), st.just(""), st.text(max_size=4))), max_size=70)  # mostly without metadata


def _outcome(build: Callable[[], list[tuple[bytes, bytes | None]]]) -> list[tuple[bytes, bytes | None]] | str:
    try:
        return build()
    except Exception as exc:  # the same error, whichever way the values are packed
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=120, deadline=None)
@given(commit=st.one_of(st.integers(0, 2**42), st.just(2**63)), partitions=_RUN_PARTITIONS)
def test_a_run_has_the_keys_and_values_of_its_records_one_by_one(
        commit: int, partitions: list[tuple[int, int, int, str]]) -> None:
    """Runs with empty metadata throughout are packed by one struct (more than one partition): the
    same bytes, and the same error for a field out of range, as a record per partition."""
    request_partitions = [Partition(partition_index=i, committed_offset=o, committed_leader_epoch=e,
                                    committed_metadata=m) for i, o, e, m in partitions]

    def by_run() -> list[tuple[bytes, bytes | None]]:
        run = offset_commit_run("g", "t", request_partitions, commit)
        return list(zip(run.keys, run.values, strict=True))

    def by_records() -> list[tuple[bytes, bytes | None]]:
        return [(r.key, r.value) for r in (offset_commit_record("g", "t", i, o, e, m, commit)
                                           for i, o, e, m in partitions)]

    assert _outcome(by_run) == _outcome(by_records)
