"""Per-group settings (Kafka's GROUP config resource) as the consumer group core uses them.

The shell hands the core a read-only mapping group id -> GroupConfigOverrides
(`state.group_configs`); here it is a plain dict the test changes between requests, the way an
IncrementalAlterConfigs would.
"""

from __future__ import annotations

from typing import Any

from coordinator.core.consumer import GroupConfigOverrides
from coordinator.core.consumer.jobs import execute_assignment_job
from coordinator.core.runtime.outcome import Schedule
from coordinator.core.runtime.timer_keys import AssignmentKey, SessionKey
from coordinator.records.consumer import assignment_epoch_record
from protocol.error_codes import ErrorCode
from tests.core.consumer_group_context import Client, ConsumerGroupContext

START_MS = 100_000  # assignment timestamps of 0 mean "never assigned"


def context(overrides: dict[str, GroupConfigOverrides], **config: Any) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext({"foo": 6}, **config)
    ctx.clock.now_ms = START_MS
    ctx.state.group_configs = overrides
    return ctx


def session_deadline(out: Any, group_id: str, member_id: str) -> int:
    [deadline] = [op.deadline_ms for op in out.timers
                  if isinstance(op, Schedule) and op.key == SessionKey(group_id, member_id)]
    return deadline


# ---- session timeout ---------------------------------------------------------------------------


def test_a_group_session_timeout_override_sets_its_members_session_timers() -> None:
    ctx = context({"short": GroupConfigOverrides(session_timeout_ms=50_000)}, session_timeout_ms=45_000)
    short = ctx.join("short")
    other = ctx.join("other")
    assert session_deadline(short, "short", short.response.member_id) == START_MS + 50_000
    assert session_deadline(other, "other", other.response.member_id) == START_MS + 45_000  # the broker's
    ctx.assert_replay_matches()


def test_a_member_is_fenced_after_its_groups_own_session_timeout() -> None:
    ctx = context({"g": GroupConfigOverrides(session_timeout_ms=50_000)}, session_timeout_ms=45_000)
    a = Client("g", ["foo"])
    ctx.poll(a)
    ctx.advance(49_999)
    assert a.member_id in ctx.group().members  # the broker's 45 s would have fenced it by now
    ctx.advance(1)
    assert a.member_id not in ctx.group().members
    ctx.assert_replay_matches()


def test_a_changed_session_timeout_applies_from_the_next_heartbeat() -> None:
    overrides: dict[str, GroupConfigOverrides] = {}
    ctx = context(overrides, session_timeout_ms=45_000)
    a = Client("g", ["foo"])
    ctx.poll(a)
    overrides["g"] = GroupConfigOverrides(session_timeout_ms=60_000)
    ctx.clock.now_ms += 1_000
    out = ctx.heartbeat("g", a.member_id, a.epoch)
    assert out.response.error_code == ErrorCode.NONE
    assert session_deadline(out, "g", a.member_id) == START_MS + 1_000 + 60_000


def test_loading_restarts_session_timers_with_each_groups_own_timeout() -> None:
    overrides = {"g": GroupConfigOverrides(session_timeout_ms=55_000)}
    ctx = context(overrides, session_timeout_ms=45_000)
    a, b = Client("g", ["foo"]), Client("h", ["foo"])
    ctx.poll(a)
    ctx.poll(b)
    loaded = type(ctx.coordinator).from_log(ctx.log, ctx.config)
    loaded.state.group_configs = overrides
    loaded.begin_loading()
    started = loaded.finish_loading(1_000)
    assert session_deadline(started, "g", a.member_id) == 56_000
    assert session_deadline(started, "h", b.member_id) == 46_000


# ---- heartbeat interval ------------------------------------------------------------------------


def test_heartbeat_responses_carry_the_groups_heartbeat_interval() -> None:
    overrides = {"g": GroupConfigOverrides(heartbeat_interval_ms=8_000)}
    ctx = context(overrides, heartbeat_interval_ms=5_000)
    a, b = Client("g", ["foo"]), Client("h", ["foo"])
    assert ctx.poll(a).heartbeat_interval_ms == 8_000
    assert ctx.poll(b).heartbeat_interval_ms == 5_000
    overrides["h"] = GroupConfigOverrides(heartbeat_interval_ms=12_000)
    assert ctx.poll(b).heartbeat_interval_ms == 12_000
    del overrides["g"]
    assert ctx.poll(a).heartbeat_interval_ms == 5_000


def test_a_parked_heartbeat_is_answered_with_the_groups_heartbeat_interval() -> None:
    ctx = context({"g": GroupConfigOverrides(heartbeat_interval_ms=7_000)}, assignor_offload=True)
    out = ctx.join("g")
    assert out.response is None  # parked until the offloaded run lands
    [job] = out.jobs
    landed = ctx._apply(ctx.coordinator.on_assignment_result(execute_assignment_job(job, ctx.state.assignors),
                                                             ctx.clock.now_ms, ctx.topics))
    [(_, response)] = landed.replies
    assert response.heartbeat_interval_ms == 7_000


# ---- assignment interval (KIP-1263) ------------------------------------------------------------


def _second_member_joins(ctx: ConsumerGroupContext, group_id: str) -> Any:
    """A first member is assigned at START_MS; a second joins 100 ms later."""
    ctx.settle([Client(group_id, ["foo"])])
    ctx.clock.now_ms = START_MS + 100
    return ctx.join(group_id)


def test_a_group_with_a_zero_assignment_interval_is_assigned_at_once_despite_the_brokers_interval() -> None:
    ctx = context({"fast": GroupConfigOverrides(assignment_interval_ms=0)}, assignment_interval_ms=1_000)
    out = _second_member_joins(ctx, "fast")
    assert ctx.group("fast").assignment_epoch == ctx.group("fast").group_epoch
    assert assignment_epoch_record("fast", ctx.group("fast").group_epoch, START_MS + 100) in out.records
    ctx.assert_replay_matches()


def test_the_brokers_interval_still_defers_a_group_without_an_override() -> None:
    ctx = context({"fast": GroupConfigOverrides(assignment_interval_ms=0)}, assignment_interval_ms=1_000)
    out = _second_member_joins(ctx, "slow")
    assert ctx.group("slow").assignment_epoch < ctx.group("slow").group_epoch
    assert Schedule(AssignmentKey("slow"), START_MS + 1_000) in out.timers


def test_a_longer_group_interval_defers_the_run_to_its_own_end() -> None:
    ctx = context({"paced": GroupConfigOverrides(assignment_interval_ms=5_000)}, assignment_interval_ms=1_000)
    out = _second_member_joins(ctx, "paced")
    assert Schedule(AssignmentKey("paced"), START_MS + 5_000) in out.timers
    ctx.clock.now_ms = START_MS + 1_000  # the broker's interval is over, the group's is not
    ctx.heartbeat("paced", out.response.member_id, out.response.member_epoch)
    assert ctx.group("paced").assignment_epoch < ctx.group("paced").group_epoch
    fired = ctx.advance(4_000)
    assert ctx.group("paced").assignment_epoch == ctx.group("paced").group_epoch
    assert assignment_epoch_record("paced", ctx.group("paced").group_epoch, START_MS + 5_000) in fired[-1].records
    ctx.assert_replay_matches()
