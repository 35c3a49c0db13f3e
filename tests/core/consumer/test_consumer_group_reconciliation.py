"""Reconciliation (docs/spec/consumer-protocol.md#reconciliation): revoke before assign, held partitions, epochs;
docs/spec/consumer-protocol.md#test-cases 13-16 and 25."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.core import Cancel, Schedule
from coordinator.core.consumer import MemberState
from coordinator.core.consumer.model import ConsumerGroupState, ConsumerMember
from coordinator.core.consumer.reconciliation import reconcile
from coordinator.core.runtime.timer_keys import RebalanceKey
from coordinator.records.consumer import current_assignment_record
from protocol.error_codes import ErrorCode
from tests.core.consumer_group_context import Client, ConsumerGroupContext, topic_id

FOO = topic_id("foo")
T = "t"  # topic ids are opaque to reconcile()


def nothing_held(topic_id: object, partition: int) -> bool:
    return False


def parts(*ps: int) -> dict[str, frozenset[int]]:
    return {T: frozenset(ps)} if ps else {}


# ---- the pure function ---------------------------------------------------------------------------


def test_a_reconciled_member_is_returned_unchanged() -> None:
    member = ConsumerMember("m", member_epoch=3, assigned_partitions=parts(0))
    assert reconcile(member, 3, parts(1), None, nothing_held) is member


def test_a_stable_member_behind_gets_new_partitions_and_moves_to_the_assignment_epoch() -> None:
    member = ConsumerMember("m", member_epoch=3, previous_member_epoch=2, assigned_partitions=parts(0))
    after = reconcile(member, 5, parts(0, 1), None, nothing_held)
    assert (after.state, after.member_epoch, after.previous_member_epoch) == (MemberState.STABLE, 5, 3)
    assert after.assigned_partitions == parts(0, 1) and after.partitions_pending_revocation == {}


def test_a_member_that_may_still_own_revoked_partitions_stays_at_its_epoch() -> None:
    member = ConsumerMember("m", member_epoch=3, previous_member_epoch=2, assigned_partitions=parts(0, 1))
    after = reconcile(member, 5, parts(0, 2), None, nothing_held)
    assert (after.state, after.member_epoch, after.previous_member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 3, 3)
    assert after.assigned_partitions == parts(0) and after.partitions_pending_revocation == parts(1)


def test_a_revocation_the_client_already_made_is_skipped() -> None:
    member = ConsumerMember("m", member_epoch=3, assigned_partitions=parts(0, 1))
    after = reconcile(member, 5, parts(0, 2), {T: frozenset({0})}, nothing_held)
    assert (after.state, after.member_epoch) == (MemberState.STABLE, 5)
    assert after.assigned_partitions == parts(0, 2)


def test_held_partitions_are_not_given_and_the_member_waits_in_unreleased_partitions() -> None:
    member = ConsumerMember("m", member_epoch=3, assigned_partitions=parts(0))
    held = {(T, 1)}
    after = reconcile(member, 5, parts(0, 1, 2), None, lambda t, p: (t, p) in held)
    assert (after.state, after.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 5)
    assert after.assigned_partitions == parts(0, 2)
    only_held = reconcile(member, 5, parts(0, 1), None, lambda t, p: (t, p) in held)
    assert (only_held.state, only_held.member_epoch, only_held.assigned_partitions) == (
        MemberState.UNRELEASED_PARTITIONS, 5, parts(0))
    released = reconcile(only_held, 5, parts(0, 1), None, nothing_held)
    assert (released.state, released.member_epoch, released.previous_member_epoch) == (MemberState.STABLE, 5, 5)
    assert released.assigned_partitions == parts(0, 1)


def test_unrevoked_partitions_wait_for_the_client_then_move_one_epoch_on() -> None:
    member = ConsumerMember("m", member_epoch=3, previous_member_epoch=3, state=MemberState.UNREVOKED_PARTITIONS,
                            assigned_partitions=parts(0), partitions_pending_revocation=parts(1))
    assert reconcile(member, 5, parts(0, 2), None, nothing_held) is member
    assert reconcile(member, 5, parts(0, 2), {T: frozenset({0, 1})}, nothing_held) is member
    after = reconcile(member, 5, parts(0, 2), {T: frozenset({0})}, nothing_held)
    assert (after.state, after.member_epoch, after.previous_member_epoch) == (MemberState.STABLE, 5, 3)
    assert after.assigned_partitions == parts(0, 2)


def test_a_member_in_an_unknown_state_is_fenced_unless_it_owns_nothing() -> None:
    member = ConsumerMember("m", member_epoch=3, state=MemberState.UNKNOWN, assigned_partitions=parts(0))
    for claimed in (None, {T: frozenset({0})}):
        try:
            reconcile(member, 5, parts(0), claimed, nothing_held)
        except Exception as exc:
            assert exc.code == ErrorCode.FENCED_MEMBER_EPOCH  # type: ignore[attr-defined]
        else:
            raise AssertionError("not fenced")
    after = reconcile(member, 5, parts(0), {}, nothing_held)
    assert (after.state, after.member_epoch) == (MemberState.STABLE, 5)


# ---- through the coordinator ---------------------------------------------------------------------


def _two_stable_members(ctx: ConsumerGroupContext) -> tuple[Client, Client]:
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.settle([a, b])
    return a, b


def test_13_a_third_member_waits_while_the_others_are_asked_to_revoke() -> None:
    ctx = ConsumerGroupContext({"foo": 6})
    a, b = _two_stable_members(ctx)
    assert ctx.group().group_epoch == 2 and len(a.owned[FOO]) == 3 and len(b.owned[FOO]) == 3
    c = Client("g", ["foo"])
    r = ctx.poll(c)
    assert (r.member_epoch, list(r.assignment.topic_partitions)) == (3, [])
    assert ctx.group().members[c.member_id].state is MemberState.UNRELEASED_PARTITIONS
    for client in (a, b):
        before = set(client.owned[FOO])
        out = ctx.heartbeat("g", client.member_id, client.epoch, topic_partitions=client.owned_request())
        member = ctx.group().members[client.member_id]
        assert (out.response.member_epoch, member.state) == (2, MemberState.UNREVOKED_PARTITIONS)
        kept = set(out.response.assignment.topic_partitions[0].partitions)
        assert len(kept) == 2 and kept < before
        assert member.partitions_pending_revocation == {FOO: frozenset(before - kept)}
        assert Schedule(RebalanceKey("g", client.member_id), 300_000, 2) in out.timers
    assert ctx.group().state is ConsumerGroupState.RECONCILING
    ctx.assert_replay_matches()


def test_14_15_a_revoking_member_moves_on_only_once_it_reports_the_partitions_gone() -> None:
    ctx = ConsumerGroupContext({"foo": 6})
    a, _b = _two_stable_members(ctx)
    ctx.poll(Client("g", ["foo"]))
    full = a.owned_request()
    first = ctx.heartbeat("g", a.member_id, a.epoch, topic_partitions=full)
    kept = first.response.assignment.topic_partitions[0].partitions
    # 14: without owned partitions, or still owning a revoked one: nothing changes
    for owned in (None, full):
        out = ctx.heartbeat("g", a.member_id, 2, topic_partitions=owned)
        assert out.records == [] and out.response.member_epoch == 2 and out.response.assignment is None
    # 15: owned partitions without the revoked ones: the new epoch, STABLE
    a.owned = {FOO: list(kept)}
    out = ctx.heartbeat("g", a.member_id, 2, topic_partitions=a.owned_request())
    member = ctx.group().members[a.member_id]
    assert (out.response.member_epoch, member.state, member.previous_member_epoch) == (3, MemberState.STABLE, 2)
    assert out.records == [current_assignment_record("g", member)]
    assert Cancel(RebalanceKey("g", a.member_id)) in out.timers
    assert out.response.assignment is None  # the assigned set did not change
    ctx.assert_replay_matches()


def test_16_the_joiner_collects_released_partitions_and_ends_stable() -> None:
    ctx = ConsumerGroupContext({"foo": 6})
    a, b = _two_stable_members(ctx)
    c = Client("g", ["foo"])
    ctx.poll(c)
    ctx.poll(a)  # asked to revoke one
    ctx.poll(a)  # acknowledged: its partition is free
    r = ctx.poll(c)
    assert len(r.assignment.topic_partitions[0].partitions) == 1
    assert ctx.group().members[c.member_id].state is MemberState.UNRELEASED_PARTITIONS
    ctx.poll(b)
    ctx.poll(b)
    r = ctx.poll(c)
    assert len(r.assignment.topic_partitions[0].partitions) == 2
    assert ctx.group().members[c.member_id].state is MemberState.STABLE
    assert ctx.group().state is ConsumerGroupState.STABLE
    ctx.assert_replay_matches()


def test_25_a_member_that_never_acknowledges_its_revocation_is_fenced_after_its_rebalance_timeout() -> None:
    ctx = ConsumerGroupContext({"foo": 6})
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    a_id = ctx.join(topics=["foo"], rebalance_timeout_ms=10_000).response.member_id
    a.member_id, a.epoch, a.joined = a_id, 1, True
    ctx.poll(b)
    out = ctx.heartbeat("g", a_id, 1)  # owned partitions not reported: UNREVOKED_PARTITIONS
    assert ctx.group().members[a_id].state is MemberState.UNREVOKED_PARTITIONS
    assert Schedule(RebalanceKey("g", a_id), 10_000, 1) in out.timers
    for _ in range(3):
        ctx.advance(4_000)
        ctx.heartbeat("g", a_id, 1)  # keeps its session alive, never acknowledges
        ctx.heartbeat("g", b.member_id, ctx.group().members[b.member_id].member_epoch)
    assert a_id not in ctx.group().members
    assert ctx.group().group_epoch == 3
    ctx.assert_replay_matches()


def test_25_a_rebalance_timer_of_an_epoch_the_member_left_is_ignored() -> None:
    ctx = ConsumerGroupContext({"foo": 6})
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.poll(a)
    ctx.poll(b)
    ctx.poll(a)  # asked to revoke: rebalance timer at epoch 1
    ctx.poll(a)  # acknowledged: epoch 2, timer cancelled
    ctx.timers.apply([Schedule(RebalanceKey("g", a.member_id), ctx.clock.now_ms + 1, 1)])  # a stale one
    assert [o.records for o in ctx.advance(1)] == [[]]
    assert a.member_id in ctx.group().members


# ---- the safety property -------------------------------------------------------------------------

ACTIONS = st.lists(st.tuples(st.sampled_from(["join", "poll", "poll_null", "poll_full", "leave", "static_leave",
                                              "wait", "resubscribe", "grow"]),
                             st.integers(0, 4)), min_size=1, max_size=60)


def assert_no_partition_held_twice(ctx: ConsumerGroupContext) -> None:
    for group in ctx.state.groups.values():
        seen: dict[tuple[object, int], str] = {}
        for member in group.members.values():
            for tp in member.held_partitions():
                assert tp not in seen, f"{tp} held by {seen[tp]} and {member.member_id}"
                seen[tp] = member.member_id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ACTIONS, st.sampled_from(["uniform", "range"]))
def test_no_partition_is_ever_held_by_two_members(actions: list[tuple[str, int]], assignor: str) -> None:
    ctx = ConsumerGroupContext({"foo": 5, "bar": 3}, assignors=(assignor,))
    clients = [Client("g", ["foo"] if i % 2 else ["foo", "bar"], instance_id=f"i{i}" if i == 3 else None)
               for i in range(5)]
    partitions = {"foo": 5, "bar": 3}
    for action, i in actions:
        client = clients[i]
        if action == "join" and not client.joined:
            ctx.poll(client)
        elif action in ("poll", "poll_null", "poll_full") and client.joined:
            ctx.poll(client, full=action == "poll_full", report_owned=action != "poll_null")
        elif action == "leave" and client.joined:
            ctx.heartbeat("g", client.member_id, -1, instance_id=client.instance_id)
            client.joined, client.epoch, client.owned, client.member_id = False, 0, {}, ""
        elif action == "static_leave" and client.joined and client.instance_id is not None:
            ctx.heartbeat("g", client.member_id, -2, instance_id=client.instance_id)
            client.joined, client.epoch, client.owned, client.member_id = False, 0, {}, ""
        elif action == "wait":
            ctx.advance(20_000)  # members that stay silent long enough are fenced
        elif action == "resubscribe" and client.joined:
            client.subscription = ["bar"] if client.subscription != ["bar"] else ["foo"]
            ctx.poll(client, full=True)
        elif action == "grow":
            partitions["foo"] += 1
            ctx.set_topic("foo", partitions["foo"])
        assert_no_partition_held_twice(ctx)
        for c in clients:  # a well-behaved client never owns what the coordinator does not let it hold
            group = ctx.state.groups.get("g")
            member = None if group is None else group.members.get(c.member_id)
            if c.joined and member is not None and member.member_epoch >= 0:
                assert c.owned_set() <= member.held_partitions()
    ctx.assert_replay_matches()
