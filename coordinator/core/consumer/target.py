"""docs/spec/consumer-protocol.md#running-the-assignor: computing a new target assignment with a server-side assignor.

Inputs are the members as they will be after the current heartbeat (a replaced static member
left out, its successor starting from its target), each with its subscription resolved to topic
ids through the group's subscription metadata and its current *target* as stickiness hint.
Output records: one target record per member whose target changed (always one for a member
without a target yet), then the assignment epoch with the time the computation finished.

A run is an `AssignmentJob` (jobs.py) whether it runs inline here or in a worker process, so
both paths give the same targets; `build_assignment_job` freezes the inputs, `target_records`
turns a result into records.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from coordinator.core.assignors import UNKNOWN_RACKS, PartitionRacks
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.jobs import (
    AssignmentJob,
    AssignmentJobResult,
    decode_target,
    encode_target,
    execute_assignment_job,
)
from coordinator.core.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer.topics import TopicId, TopicInfo
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import Record
from coordinator.records.consumer import assignment_epoch_record, target_assignment_record
from protocol.error_codes import ErrorCode


@dataclass(slots=True)
class TargetAssignmentResult:
    targets: dict[str, Assignment]  # member id -> new target, for every member given
    records: list[Record] = field(default_factory=list)


def choose_assignor(state: ShardState, group: ConsumerGroup, members: Mapping[str, ConsumerMember]) -> str:
    """The assignor most members asked for, else the default (first of group.consumer.assignors)."""
    preferred = group.preferred_assignor(members.values())
    if preferred is None or preferred not in state.consumer_config.assignors:
        return state.consumer_config.default_assignor  # a stored choice the config no longer offers falls back
    return preferred


def build_assignment_job(state: ShardState, group: ConsumerGroup, group_epoch: int,
                         members: Mapping[str, ConsumerMember], metadata: Mapping[str, TopicInfo],
                         current_targets: Mapping[str, Assignment]) -> AssignmentJob:
    """Freeze the inputs of a run for `group_epoch` (compactly: they may be pickled on the event loop)."""
    job_id = state.next_job_id
    state.next_job_id += 1
    table = state.topic_table
    if table is None or table[0] is not metadata:  # replay installs a new dict on every change
        infos = sorted(metadata.values(), key=lambda t: t.name)
        table = state.topic_table = (metadata, tuple(str(t.topic_id) for t in infos),
                                     {t.topic_id: i for i, t in enumerate(infos)},
                                     {t.name: i for i, t in enumerate(infos)})
    _, topic_ids, index_by_id, index_by_name = table
    infos = [metadata[name] for name in sorted(metadata)]
    # Each distinct subscription resolved once, found by identity (interned on replay) before value.
    by_identity: dict[int, int] = {}
    distinct: dict[tuple[str, ...], int] = {}
    subscriptions: list[tuple[int, ...]] = []
    member_subscriptions = array("i")
    member_ids = tuple(sorted(members))
    current: list[bytes] = []
    encoded = state.encoded_targets
    gid = group.group_id
    for member_id in member_ids:
        names = members[member_id].subscribed_topics
        k = by_identity.get(id(names))
        if k is None:
            k = distinct.get(names)
            if k is None:
                k = distinct[names] = len(subscriptions)
                subscriptions.append(tuple(sorted(index_by_name[n] for n in names if n in index_by_name)))
            by_identity[id(names)] = k
        member_subscriptions.append(k)
        target = current_targets.get(member_id, {})
        cached = encoded.get((gid, member_id))
        if cached is not None and cached[0] is target and cached[1] is table:
            current.append(cached[2])
            continue
        blob = encode_target(restrict(target, index_by_id), index_by_id)
        if len(encoded) > 1_000_000:
            encoded.clear()
        encoded[(gid, member_id)] = (target, table, blob)
        current.append(blob)
    return AssignmentJob(
        job_id, group.group_id, group_epoch, choose_assignor(state, group, members), topic_ids,
        tuple(t.num_partitions for t in infos), tuple(subscriptions), member_ids,
        tuple(members[m].instance_id for m in member_ids), tuple(members[m].rack_id for m in member_ids),
        member_subscriptions.tobytes(), tuple(current), _partition_racks(infos))


def _partition_racks(infos: list[TopicInfo]) -> PartitionRacks:
    """The replica racks the topics view knows (a cluster's; none on a single node)."""
    known = {str(info.topic_id): info.replica_racks for info in infos if info.replica_racks}
    return PartitionRacks(known) if known else UNKNOWN_RACKS


def restrict(assignment: Assignment, topic_ids: Mapping[TopicId, object] | AbstractSet[TopicId]) -> Assignment:
    """The assignment without topics outside `topic_ids` (the same object when nothing goes)."""
    if all(t in topic_ids for t in assignment):
        return assignment
    return {t: ps for t, ps in assignment.items() if t in topic_ids}


def run_inline(state: ShardState, job: AssignmentJob) -> AssignmentJobResult:
    """The run on the coordinator's own thread (offload off). Raises UNKNOWN_SERVER_ERROR on failure."""
    result = execute_assignment_job(job, state.assignors)
    if result.error is not None:
        raise ConsumerGroupError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"Failed to compute a new target assignment for epoch {job.epoch}: {result.error}")
    return result


def topic_ids_by_text(metadata: Mapping[str, TopicInfo]) -> dict[str, TopicId]:
    """Topic id text -> the codec's topic id: build it once per result, not per member."""
    return {str(t.topic_id): t.topic_id for t in metadata.values()}


def decode_assignment(blob: bytes, topic_ids: tuple[str, ...], by_text: Mapping[str, TopicId]) -> Assignment:
    """A result's target, keyed by the codec's topic ids again (`by_text`: topic_ids_by_text)."""
    return {by_text[t]: ps for t, ps in decode_target(blob, topic_ids).items() if t in by_text}


def target_records(group: ConsumerGroup, targets: Mapping[str, Assignment], epoch: int,
                   now_ms: int) -> list[Record]:
    """Records for the targets that changed (or that the member has none of yet), then the epoch."""
    records = []
    for member_id in sorted(targets):
        new = targets[member_id]
        old = group.target_assignment.get(member_id)
        if old is None or old != new:
            records.append(target_assignment_record(group.group_id, member_id, new))
    records.append(assignment_epoch_record(group.group_id, epoch, now_ms))
    return records


def compute_target_assignment(state: ShardState, group: ConsumerGroup, group_epoch: int,
                              members: Mapping[str, ConsumerMember], metadata: Mapping[str, TopicInfo],
                              current_targets: Mapping[str, Assignment], now_ms: int) -> TargetAssignmentResult:
    """Run the chosen assignor inline for `group_epoch`.

    `members` are the members after this heartbeat, `current_targets` their targets before it
    (member id -> target; a replacing static member under its new id). Raises UNKNOWN_SERVER_ERROR
    when the assignor fails; nothing is written then.
    """
    job = build_assignment_job(state, group, group_epoch, members, metadata, current_targets)
    result = run_inline(state, job)
    known = {t.topic_id for t in metadata.values()}
    by_text = topic_ids_by_text(metadata)
    targets = {m: (decode_assignment(result.changed[m], job.topic_ids, by_text) if m in result.changed
                   else restrict(current_targets.get(m, {}), known)) for m in members}
    return TargetAssignmentResult(targets, target_records(group, targets, group_epoch, now_ms))
