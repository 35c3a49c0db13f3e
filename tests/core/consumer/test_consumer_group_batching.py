"""KIP-1263 (docs/spec/consumer-protocol.md#batching-and-offload): batched and offloaded target assignment runs, with a
fake clock.

Offloaded runs are executed here by hand (`land`), the way the shell's worker pool would, so the
tests choose when a result arrives and what changed meanwhile.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import Outcome
from coordinator.core.assignors import (
    ASSIGNORS,
    PartitionAssignor,
    PartitionAssignorError,
)
from coordinator.core.consumer.jobs import AssignmentJob, execute_assignment_job
from coordinator.core.runtime.outcome import Schedule
from coordinator.core.runtime.timer_keys import AssignmentKey
from coordinator.records import RecordType, decode_record_versions
from coordinator.records.consumer import (
    assignment_epoch_record,
    consumer_group_epoch_record,
    current_assignment_record,
    member_subscription_record,
    subscription_metadata_record,
    target_assignment_record,
)
from protocol.messages import (
    ConsumerGroupHeartbeatResponse,
)
from tests.core.consumer_group_context import Client, ConsumerGroupContext, topic_id

START_MS = 100_000  # timestamps of 0 mean "never assigned"


def context(**config: Any) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext({"foo": 6, "bar": 3}, **config)
    ctx.clock.now_ms = START_MS
    return ctx


def land(ctx: ConsumerGroupContext, job: AssignmentJob) -> Outcome:
    """The worker runs the job now; its result goes back into the coordinator."""
    result = execute_assignment_job(job, ctx.state.assignors)
    return ctx._apply(ctx.coordinator.on_assignment_result(result, ctx.clock.now_ms, ctx.topics))


TARGET_MEMBER = RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER


def target_member_ids(out: Outcome) -> list[str]:
    decoded = [decode_record_versions(r.key, r.value) for r in out.records]
    return [d.key.member_id for d in decoded if d.record_type == TARGET_MEMBER and d.value is not None]


def target_records_in(out: Outcome) -> int:
    return sum(1 for r in out.records if decode_record_versions(r.key, r.value).record_type == TARGET_MEMBER)


def stored_timestamp(ctx: ConsumerGroupContext) -> int:
    return ctx.group().assignment_timestamp_ms


def _failing(name: str) -> PartitionAssignor:
    def assign(members: Any, topics: Any, racks: Any = None) -> Any:
        raise PartitionAssignorError("boom")
    return PartitionAssignor(name, assign)


# ---- batching --------------------------------------------------------------------------------


def test_a_change_within_the_interval_bumps_the_epoch_but_defers_the_run_to_a_timer() -> None:
    ctx = context(assignment_interval_ms=1000)
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.settle([a])
    assert stored_timestamp(ctx) == START_MS  # the first run of the group is never deferred
    ctx.clock.now_ms += 100
    out = ctx.join(topics=["foo"])
    b.member_id, b.epoch, b.joined = out.response.member_id, out.response.member_epoch, True
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (2, 1)
    assert target_records_in(out) == 0  # no run: the new member has no target until the next one
    assert out.response.member_epoch == 1 and out.response.assignment.topic_partitions == []
    assert Schedule(AssignmentKey("g"), START_MS + 1000) in out.timers
    ctx.assert_replay_matches()


def test_a_later_heartbeat_of_any_member_starts_the_deferred_run() -> None:
    ctx = context(assignment_interval_ms=1000)
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.settle([a])
    ctx.clock.now_ms += 100
    ctx.poll(b)
    ctx.clock.now_ms = START_MS + 1000  # the interval has passed; no timer fired (the clock was set, not advanced)
    logged = len(ctx.log)
    ctx.poll(a)
    assert ctx.group().assignment_epoch == 2
    assert assignment_epoch_record("g", 2, START_MS + 1000) in ctx.log[logged:]
    assert stored_timestamp(ctx) == START_MS + 1000
    ctx.settle([a, b])
    assert sorted(len(c.owned_set()) for c in (a, b)) == [3, 3]
    ctx.assert_replay_matches()


def test_the_assignment_timer_starts_the_deferred_run_without_a_heartbeat() -> None:
    ctx = context(assignment_interval_ms=1000)
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.settle([a])
    ctx.clock.now_ms += 100
    ctx.poll(b)
    fired = ctx.advance(900)
    assert len(fired) == 1
    assert sorted(target_member_ids(fired[0])) == sorted([a.member_id, b.member_id])
    assert fired[0].records[-1] == assignment_epoch_record("g", 2, START_MS + 1000)
    ctx.assert_replay_matches()


def test_an_emptied_group_assigns_its_next_member_at_once() -> None:
    ctx = context(assignment_interval_ms=1000)
    a = Client("g", ["foo"])
    ctx.settle([a])
    ctx.heartbeat("g", a.member_id, -1)
    ctx.clock.now_ms += 10  # well within the interval
    out = ctx.join(topics=["foo"])
    assert out.response.member_epoch == ctx.group().assignment_epoch == ctx.group().group_epoch
    assert stored_timestamp(ctx) == START_MS + 10


def test_the_timestamp_is_persisted_in_the_tagged_field_and_replayed() -> None:
    ctx = context(assignment_interval_ms=1000)
    ctx.settle([Client("g", ["foo"])])
    decoded = [decode_record_versions(r.key, r.value) for r in ctx.log]
    value = next(d.value for d in decoded if d.record_type == RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA)
    assert (value.assignment_epoch, value.assignment_timestamp) == (1, START_MS)
    rebuilt = ctx.coordinator.from_log(ctx.log, ctx.config)
    assert rebuilt.state.groups["g"].assignment_timestamp_ms == START_MS
    ctx.assert_replay_matches()


def test_a_lagging_target_still_revokes_topics_the_member_no_longer_subscribes_to() -> None:
    ctx = context(assignment_interval_ms=1000)
    a = Client("g", ["foo", "bar"])
    ctx.settle([a])
    assert {t for t, _ in a.owned_set()} == {topic_id("foo"), topic_id("bar")}
    ctx.clock.now_ms += 100
    response = ctx.poll(Client("g", ["foo"]))  # within the interval: no run
    assert ctx.group().assignment_epoch == 1
    out = ctx.heartbeat("g", a.member_id, a.epoch, subscribed_topic_names=["foo"], topic_partitions=a.owned_request())
    assert ctx.group().assignment_epoch == 1  # still no run
    assert {tp.topic_id for tp in out.response.assignment.topic_partitions} == {topic_id("foo")}
    assert response.member_epoch == 1
    ctx.assert_replay_matches()


def test_epoch_one_is_reserved_for_an_empty_target_and_the_first_run_is_epoch_two() -> None:
    ctx = context(initial_empty_assignment=True)
    out = ctx.join(topics=["foo"])
    member = ctx.group().members[out.response.member_id]
    foo = ctx.topics.by_name("foo")
    assert out.records == [
        member_subscription_record("g", member),
        assignment_epoch_record("g", 1),
        subscription_metadata_record("g", {"foo": foo}),
        consumer_group_epoch_record("g", 2),
        target_assignment_record("g", member.member_id, {foo.topic_id: frozenset(range(6))}),
        assignment_epoch_record("g", 2, START_MS),
        current_assignment_record("g", member),
    ]
    assert out.response.member_epoch == 2
    ctx.assert_replay_matches()


# ---- offload ---------------------------------------------------------------------------------


def test_an_offloaded_run_is_a_job_and_the_heartbeat_that_started_it_is_answered_when_it_lands() -> None:
    ctx = context(assignor_offload=True)
    out = ctx.join(topics=["foo"])
    assert out.response is None  # parked
    assert [j.epoch for j in out.jobs] == [2]
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (2, 1)
    member_id = next(iter(group.members))
    assert group.members[member_id].member_epoch == 1  # reconciled to the reserved empty epoch 1
    landed = land(ctx, out.jobs[0])
    [(_ref, response)] = landed.replies
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    assert response.member_epoch == 2
    assert sorted(response.assignment.topic_partitions[0].partitions) == list(range(6))
    assert ctx.group().assignment_epoch == 2
    ctx.assert_replay_matches()


def test_a_parked_heartbeat_gets_its_first_answer_when_the_run_is_late() -> None:
    ctx = context(assignor_offload=True, assignment_wait_ms=500)
    out = ctx.join(topics=["foo"])
    [fired] = ctx.advance(500)
    [(_, response)] = fired.replies
    assert response.member_epoch == 1 and response.assignment.topic_partitions == []
    assert land(ctx, out.jobs[0]).replies == []  # applied, nobody left to answer
    assert ctx.group().assignment_epoch == 2


def test_a_second_change_while_a_run_is_in_flight_starts_no_second_run() -> None:
    ctx = context(assignor_offload=True)
    first = ctx.join(topics=["foo"])
    second = ctx.join(topics=["foo"])
    assert len(first.jobs) == 1 and second.jobs == []
    assert second.response.member_epoch == 1  # not parked: it did not start the run
    assert ctx.group().group_epoch == 3
    out = land(ctx, first.jobs[0])
    assert ctx.group().assignment_epoch == 2
    # The run missed the second member: it gets an empty target, and the next run follows at once.
    assert Schedule(AssignmentKey("g"), ctx.clock.now_ms) in out.timers
    [fired] = ctx.advance(0)
    assert len(fired.jobs) == 1 and fired.jobs[0].epoch == 3
    land(ctx, fired.jobs[0])
    assert ctx.group().assignment_epoch == 3
    ctx.assert_replay_matches()


def test_a_result_for_a_deleted_group_writes_nothing() -> None:
    ctx = context(assignor_offload=True)
    out = ctx.join(topics=["foo"])
    ctx.advance(1000)  # the parked heartbeat gets its provisional answer
    ctx.heartbeat("g", next(iter(ctx.group().members)), -1)
    ctx.write(ctx.coordinator.deletion_records("g"))
    assert "g" not in ctx.state.groups
    landed = land(ctx, out.jobs[0])
    assert landed.records == [] and landed.replies == []
    ctx.assert_replay_matches()


def test_a_member_removed_while_the_run_was_in_flight_gets_no_target() -> None:
    ctx = context(assignor_offload=True, assignment_wait_ms=0)
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    first = ctx.join(topics=["foo"])
    land(ctx, first.jobs[0])
    a.member_id = first.response.member_id
    a.joined, a.epoch = True, 1
    ctx.poll(a)
    out = ctx.join(topics=["foo"])  # b joins: a run for epoch 3
    b.member_id = out.response.member_id
    [job] = out.jobs
    ctx.heartbeat("g", b.member_id, -1)  # and leaves before it lands
    landed = land(ctx, job)
    assert b.member_id not in ctx.group().target_assignment
    assert target_member_ids(landed) in ([], [a.member_id])
    ctx.assert_replay_matches()


def test_a_static_successor_takes_the_new_target_of_the_member_it_replaced() -> None:
    ctx = context(assignor_offload=True, assignment_wait_ms=0)
    a = ctx.join(topics=["foo"])
    land(ctx, a.jobs[0])
    s = ctx.join(topics=["foo"], instance_id="i1")
    old_id = s.response.member_id
    [job] = s.jobs
    ctx.heartbeat("g", old_id, -2, instance_id="i1")  # leaves for a while
    successor = ctx.join(topics=["foo"], instance_id="i1")
    new_id = successor.response.member_id
    land(ctx, job)
    expected = execute_assignment_job(job).changed[old_id]
    assert expected  # the run gave the static member partitions
    assert ctx.group().target_assignment[new_id] and old_id not in ctx.group().members
    assert len(ctx.group().target_assignment[new_id][topic_id("foo")]) == 3
    ctx.assert_replay_matches()


def test_a_failed_run_logs_writes_nothing_and_is_retried_after_the_interval() -> None:
    ctx = context(assignor_offload=True, assignment_interval_ms=1000)
    ctx.state.assignors = {"uniform": _failing("uniform"), "range": ASSIGNORS["range"]}
    out = ctx.join(topics=["foo"])
    landed = land(ctx, out.jobs[0])
    assert landed.records == []
    assert [e.name for e in landed.events] == ["consumer_assignment_failed"]
    assert [r.member_epoch for _, r in landed.replies] == [1]  # the parked heartbeat: its provisional answer
    assert Schedule(AssignmentKey("g"), ctx.clock.now_ms + 1000) in landed.timers
    assert "g" not in ctx.state.runs
    ctx.state.assignors = dict(ASSIGNORS)
    [retry] = ctx.advance(1000)
    assert len(retry.jobs) == 1
    land(ctx, retry.jobs[0])
    assert ctx.group().assignment_epoch == 2
    ctx.assert_replay_matches()


def test_offloaded_and_inline_runs_give_the_same_targets() -> None:
    inline, offloaded = context(initial_empty_assignment=True), context(assignor_offload=True, assignment_wait_ms=0)
    for ctx in (inline, offloaded):
        for _ in range(3):
            out = ctx.join(topics=["foo", "bar"])
            for job in out.jobs:
                land(ctx, job)
    inline_sizes = sorted(sum(map(len, t.values())) for t in inline.group().target_assignment.values())
    offloaded_sizes = sorted(sum(map(len, t.values())) for t in offloaded.group().target_assignment.values())
    assert inline_sizes == offloaded_sizes == [3, 3, 3]
