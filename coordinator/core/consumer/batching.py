"""KIP-1263: batched and offloaded target assignment runs of consumer groups.

When the group epoch is ahead of the assignment epoch, `update_target` decides
(docs/spec/consumer-protocol.md#batching-and-offload):
* a run is already in flight for the group -> wait for it (at most one run per group);
* the last run finished less than `assignment_interval_ms` ago -> defer: the group keeps its
  current target, and an assignment timer fires at the interval's end to start the run. Apache
  Kafka arms no timer (the next heartbeat of any member after the interval starts the run, and
  members heartbeat at least every heartbeat interval); the timer starts it on time even when
  every member is waiting out a 5 s heartbeat interval, and a heartbeat after the interval
  starts it too. A group that emptied counts as never assigned (timestamp 0), so a new member is
  not delayed; the stored timestamp is simply ignored then rather than rewritten;
* offload on -> emit an `AssignmentJob` (Outcome.jobs) and remember the run; the members keep
  reconciling towards the current target meanwhile;
* offload off -> run the assignor inline, as the snapshot does.

The group epoch still bumps on every change; only the run is deferred, so changes within the
interval are folded into one run.

How a heartbeat that starts an offloaded run is answered: Kafka answers it at once with the
current (lagging) target, so a member joining a new group gets the empty epoch-1 assignment and
its partitions only on its next heartbeat, a heartbeat interval (5 s) later. Here that heartbeat
is parked instead (Outcome.response None, a `Waiter` in soft state) and answered when the run
lands, reconciled against the new target; if it has not landed within `assignment_wait_ms`
(1 s) the parked heartbeat gets the answer it would have had at once. Only the heartbeat that
started the run waits, the connection it came on is the only one held, and every other group
keeps being served. Deferred runs (the interval) do not park anyone: that delay is the point.

When a result lands (`on_assignment_result`) it is applied only if it is the group's run in
flight; changes it missed are applied on the way: a deleted group drops it; removed members
are left out; a static member's successor takes its predecessor's new target; members that
joined since get an empty target; topics a member no longer subscribes to (or that are gone)
are cut from its target. The result is written as the assignment epoch it was computed for,
with the time it landed; if the group epoch moved on meanwhile, the next run follows (after
the interval). A failed run is logged (a `consumer_assignment_failed` event), writes nothing
and is retried after the interval. A run that never lands (a lost worker) expires after
`RUN_EXPIRY_MS` and the next trigger starts another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.core.consumer.group_configs import (
    assignment_interval_ms,
    heartbeat_interval_ms,
)
from coordinator.core.consumer.jobs import AssignmentJob, AssignmentJobResult
from coordinator.core.consumer.member_step import reconcile_member, subscription_filter
from coordinator.core.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer.responses import heartbeat_response
from coordinator.core.consumer.state import AssignmentRun, Waiter
from coordinator.core.consumer.target import (
    build_assignment_job,
    compute_target_assignment,
    decode_assignment,
    restrict,
    target_records,
    topic_ids_by_text,
)
from coordinator.core.consumer.topics import TopicId, TopicInfo, TopicsView
from coordinator.core.runtime.context import RequestRef
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import AssignmentKey, AssignmentWaitKey

#: A run in flight this long is taken as lost (its worker died); the next trigger starts another.
RUN_EXPIRY_MS = 60_000


def update_target(state: ShardState, group: ConsumerGroup, group_epoch: int, assignment_epoch: int,
                  members: Mapping[str, ConsumerMember], metadata: Mapping[str, TopicInfo], member: ConsumerMember,
                  fx: Effects) -> tuple[int, Assignment]:
    """(assignment epoch, target) `member` reconciles towards in this request; records, timers and
    jobs into `fx`. Called only when `group_epoch > assignment_epoch`."""
    current_targets = None
    if _may_start_run(state, group, fx.now_ms, fx):
        current_targets = {mid: group.target_for(mid, m.instance_id) for mid, m in members.items()}
        if not state.consumer_config.assignor_offload:
            result = compute_target_assignment(state, group, group_epoch, members, metadata, current_targets,
                                               fx.now_ms)
            fx.records.extend(result.records)
            return group_epoch, result.targets[member.member_id]
        start_run(state, group, group_epoch, members, metadata, current_targets, fx)
    if current_targets is not None:
        return assignment_epoch, current_targets[member.member_id]
    return assignment_epoch, group.target_for(member.member_id, member.instance_id)


def _may_start_run(state: ShardState, group: ConsumerGroup, now_ms: int, fx: Effects) -> bool:
    """False while a run is in flight or the interval since the last one has not passed (then the
    assignment timer is armed for its end)."""
    run = state.runs.get(group.group_id)
    if run is not None and now_ms - run.started_ms < RUN_EXPIRY_MS:
        return False
    last = group.assignment_timestamp_ms if group.members else 0  # an emptied group starts afresh
    interval = assignment_interval_ms(state, group.group_id)  # the group's own, else the broker's
    if last and now_ms - last < interval:
        fx.schedule(AssignmentKey(group.group_id), last + interval - now_ms)
        return False
    return True


def start_run(state: ShardState, group: ConsumerGroup, group_epoch: int,
              members: Mapping[str, ConsumerMember], metadata: Mapping[str, TopicInfo],
              current_targets: Mapping[str, Assignment], fx: Effects) -> AssignmentJob:
    job = build_assignment_job(state, group, group_epoch, members, metadata, current_targets)
    state.runs[group.group_id] = AssignmentRun(
        job.job_id, group_epoch, fx.now_ms, {mid: m.subscribed_topics for mid, m in members.items()},
        metadata, {m.instance_id: mid for mid, m in members.items() if m.instance_id is not None}, job.topic_ids)
    fx.jobs.append(job)
    fx.cancel(AssignmentKey(group.group_id))
    fx.event("consumer_assignment_started", group.group_id, group_epoch=group_epoch, job_id=job.job_id,
             members=len(members))
    return job


def abandon_runs(state: ShardState, fx: Effects) -> None:
    """The request that emitted `fx.jobs` failed: its records are dropped, so are its runs."""
    for job in fx.jobs:
        run = state.runs.get(job.group_id)
        if run is not None and run.job_id == job.job_id:
            del state.runs[job.group_id]
    fx.jobs.clear()


# ---- parked heartbeats -----------------------------------------------------------------------


def park(state: ShardState, group_id: str, waiter: Waiter, fx: Effects) -> None:
    """Hold the heartbeat's answer until the group's run lands (bounded by assignment_wait_ms)."""
    state.waiters.setdefault(group_id, []).append(waiter)
    fx.schedule(AssignmentWaitKey(group_id, waiter.ref.id), state.consumer_config.assignment_wait_ms)


def maybe_park(state: ShardState, group_id: str, ref: RequestRef | None, member: ConsumerMember,
               before_assigned: Assignment, owned: Assignment | None, full: bool, response: Any,
               fx: Effects) -> Any | None:
    """None (parked) when this request started the group's offloaded run; else `response`."""
    if ref is None or state.consumer_config.assignment_wait_ms <= 0 or not any(j.group_id == group_id for j in fx.jobs):
        return response
    park(state, group_id, Waiter(ref, member.member_id, member, before_assigned, owned, full, response), fx)
    return None


def _answer_all(state: ShardState, group_id: str, fx: Effects) -> None:
    """The run will not help them: parked heartbeats get their provisional answers now."""
    for waiter in state.waiters.pop(group_id, []):
        fx.cancel(AssignmentWaitKey(group_id, waiter.ref.id))
        fx.replies.append((waiter.ref, waiter.provisional))


# ---- timers ----------------------------------------------------------------------------------


def on_assignment_wait_timer(state: ShardState, key: AssignmentWaitKey, fx: Effects) -> None:
    """A parked heartbeat's wait is over: it gets its provisional answer."""
    group_id = key.group_id
    waiters = state.waiters.get(group_id, [])
    for waiter in [w for w in waiters if w.ref.id == key.request_id]:
        waiters.remove(waiter)
        fx.replies.append((waiter.ref, waiter.provisional))
    if not waiters:
        state.waiters.pop(group_id, None)


def on_assignment_timer(state: ShardState, key: AssignmentKey, fx: Effects, topics: TopicsView) -> None:
    group_id = key.group_id
    group = state.groups.consumer(group_id)
    if group is None or not group.members or group.group_epoch <= group.assignment_epoch:
        return  # nothing to assign (an empty group is assigned when a member joins)
    if not _may_start_run(state, group, fx.now_ms, fx):
        return
    current_targets = {mid: group.target_for(mid, m.instance_id) for mid, m in group.members.items()}
    if state.consumer_config.assignor_offload:
        start_run(state, group, group.group_epoch, group.members, group.subscription_metadata, current_targets, fx)
        return
    try:
        result = compute_target_assignment(state, group, group.group_epoch, group.members,
                                           group.subscription_metadata, current_targets, fx.now_ms)
    except Exception as exc:  # a failed run is logged and retried, never raised from a timer
        _failed(state, group, group.group_epoch, str(exc), fx)
        return
    fx.records.extend(result.records)
    fx.event("consumer_assignment_computed", group_id, assignment_epoch=group.group_epoch, inline=True)


def _failed(state: ShardState, group: ConsumerGroup, epoch: int, error: str, fx: Effects) -> None:
    fx.event("consumer_assignment_failed", group.group_id, group_epoch=epoch, error=error)
    fx.schedule(AssignmentKey(group.group_id), max(assignment_interval_ms(state, group.group_id), 1))


# ---- a run lands -----------------------------------------------------------------------------


def on_assignment_result(state: ShardState, result: AssignmentJobResult, fx: Effects,
                         topics: TopicsView) -> None:
    """Apply a finished run if the group still waits for it, with the changes it missed."""
    group_id = result.group_id
    run = state.runs.get(group_id)
    if run is None or run.job_id != result.job_id:
        return  # a run of a group deleted meanwhile, or of a shard since rebuilt: stale
    del state.runs[group_id]
    group = state.groups.consumer(group_id)
    if group is None or group.assignment_epoch >= result.epoch:
        _answer_all(state, group_id, fx)
        return
    if result.error is not None:
        _failed(state, group, result.epoch, result.error, fx)
        _answer_all(state, group_id, fx)
        return
    metadata = group.subscription_metadata
    counts = {t.topic_id: t.num_partitions for t in metadata.values()}
    subscribed_ids: dict[int, frozenset[TopicId]] = {}  # per subscription tuple (interned, so shared)
    by_text = topic_ids_by_text(metadata)
    targets: dict[str, Assignment] = {}
    for member_id, member in group.members.items():
        source = member_id
        if member_id not in run.subscriptions and member.instance_id is not None:
            source = run.instance_ids.get(member.instance_id, member_id)  # a static successor
        if source in result.changed:
            target = decode_assignment(result.changed[source], run.topic_ids, by_text)
        else:  # unchanged by the run (or joined since: empty)
            target = group.target_for(member_id, member.instance_id)
        if run.subscriptions.get(source) != member.subscribed_topics or metadata is not run.metadata:
            target = _still_subscribed(target, member.subscribed_topics, metadata, counts, subscribed_ids)
        targets[member_id] = target
    fx.records.extend(target_records(group, targets, result.epoch, fx.now_ms))
    fx.event("consumer_assignment_computed", group_id, assignment_epoch=result.epoch, inline=False,
             changed=len(result.changed))
    _answer_waiters(state, group, result.epoch, targets, fx, topics)
    if group.group_epoch > result.epoch and group.members:
        # Changes arrived while the run was in flight: the next run, after the interval.
        fx.schedule(AssignmentKey(group_id), assignment_interval_ms(state, group_id))


def _still_subscribed(target: Assignment, names: tuple[str, ...], metadata: Mapping[str, TopicInfo],
                      counts: Mapping[TopicId, int], subscribed_ids: dict[int, frozenset[TopicId]]) -> Assignment:
    """The target without topics the member left or that are gone, and without partitions past a
    topic's count. `subscribed_ids` memoises the topic ids of each subscription tuple: with 1,000
    members of 1,000 topics, resolving every member's names on each landing cost ~100 ms."""
    subscribed = subscribed_ids.get(id(names))
    if subscribed is None:
        subscribed = subscribed_ids[id(names)] = frozenset(metadata[n].topic_id for n in names if n in metadata)
    target = restrict(target, subscribed)
    # Partition counts only grow, but a recreated topic keeps nothing of the old one's partitions.
    if all(max(ps) < counts[t] for t, ps in target.items()):
        return target
    return {t: frozenset(p for p in ps if p < counts[t]) for t, ps in target.items() if min(ps) < counts[t]}


def _answer_waiters(state: ShardState, group: ConsumerGroup, epoch: int, targets: Mapping[str, Assignment],
                    fx: Effects, topics: TopicsView) -> None:
    """Parked heartbeats are answered as if they had arrived now, against the new target."""
    group_id = group.group_id
    for waiter in state.waiters.pop(group_id, []):
        fx.cancel(AssignmentWaitKey(group_id, waiter.ref.id))
        member = group.members.get(waiter.member_id)
        if member is None or member.assignment_fields() != waiter.member.assignment_fields():
            fx.replies.append((waiter.ref, waiter.provisional))  # something else moved it on
            continue
        reconciled = reconcile_member(fx, group_id, member, epoch, targets.get(waiter.member_id, {}), waiter.owned,
                                      group.is_held, subscription_filter(member, group.subscription_metadata, topics))
        changed = reconciled.assigned_partitions != waiter.before_assigned
        assigned = reconciled.assigned_partitions if waiter.full or changed else None
        fx.replies.append((waiter.ref, heartbeat_response(member.member_id, reconciled.member_epoch,
                                                          heartbeat_interval_ms(state, group_id), assigned)))
