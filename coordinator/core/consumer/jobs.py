"""KIP-1263 assignor runs as self-contained jobs: frozen, compact inputs in; a compact result out.

A job is what the core emits (`Outcome.jobs`) when a consumer group needs a new target assignment
and runs are offloaded; the shell runs `execute_assignment_job` in a worker process and feeds the
result back (`ConsumerGroupCoordinator.on_assignment_result`). The inline path runs the very same
function, so both give identical targets.

Inputs are pickled on the event loop, so they are kept flat: topics by index, each distinct
subscription once (as topic indexes), and every target as one `array('i')` of
`[topic index, partition count, partitions...]` runs. For 1,000 members over 50,000 partitions
this pickles to about 0.5 MB in about a millisecond (tests/bench/assignment_offload.py prints it);
dicts of frozensets pickle several times slower. The worker diffs the new targets against the
inputs and sends back only the members whose target changed.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from coordinator.core.assignors import (
    ASSIGNORS,
    UNKNOWN_RACKS,
    MemberSpec,
    PartitionAssignor,
    PartitionAssignorError,
    PartitionRacks,
)

#: One member's target: topic index -> partitions, encoded as [topic index, n, p1..pn, ...].
EncodedTarget = bytes
#: How a target names its topics: by id in the shard, by id text in a job.
_TopicKey = TypeVar("_TopicKey", bound=Hashable)


@dataclass(frozen=True, slots=True)
class AssignmentJob:
    job_id: int
    group_id: str
    epoch: int  # the group epoch this run computes the target assignment for
    assignor: str
    topic_ids: tuple[str, ...]  # topic index -> topic id text (the assignors key topics by text)
    partition_counts: tuple[int, ...]
    subscriptions: tuple[tuple[int, ...], ...]  # distinct subscriptions, as topic indexes
    member_ids: tuple[str, ...]
    instance_ids: tuple[str | None, ...]
    racks: tuple[str | None, ...]
    member_subscriptions: bytes  # array('i'): per member, its index into `subscriptions`
    current: tuple[EncodedTarget, ...]  # per member, its current target (the stickiness hint)
    partition_racks: PartitionRacks = UNKNOWN_RACKS  # by topic id text; unknown on a single node


@dataclass(frozen=True, slots=True)
class AssignmentJobResult:
    job_id: int
    group_id: str
    epoch: int
    changed: dict[str, EncodedTarget] = field(default_factory=dict)  # member id -> new target, if changed
    error: str | None = None


def encode_target(target: Mapping[_TopicKey, Iterable[int]], topic_index: Mapping[_TopicKey, int]) -> EncodedTarget:
    out = array("i")
    for topic, partitions in target.items():
        ps = sorted(partitions)
        if ps:
            out.append(topic_index[topic])
            out.append(len(ps))
            out.extend(ps)
    return out.tobytes()


def decode_target(blob: EncodedTarget, topic_ids: tuple[str, ...]) -> dict[str, frozenset[int]]:
    values = array("i")
    values.frombytes(blob)
    out: dict[str, frozenset[int]] = {}
    i, n = 0, len(values)
    while i < n:
        count = values[i + 1]
        out[topic_ids[values[i]]] = frozenset(values[i + 2:i + 2 + count])
        i += 2 + count
    return out


def execute_assignment_job(job: AssignmentJob,
                           assignors: Mapping[str, PartitionAssignor] = ASSIGNORS) -> AssignmentJobResult:
    """Run the job's assignor: pure, picklable in and out, never raises (a failure is `error`).
    The shell times it (queue and processing time) around the call."""
    try:
        topic_ids = job.topic_ids
        subscription_sets = [frozenset(topic_ids[i] for i in sub) for sub in job.subscriptions]
        member_subscriptions = array("i")
        member_subscriptions.frombytes(job.member_subscriptions)
        specs: dict[str, MemberSpec] = {}
        for k, member_id in enumerate(job.member_ids):
            specs[member_id] = MemberSpec(subscription_sets[member_subscriptions[k]], job.racks[k],
                                          job.instance_ids[k], decode_target(job.current[k], topic_ids))
        counts = dict(zip(topic_ids, job.partition_counts, strict=False))
        result = assignors[job.assignor].assign(specs, counts, job.partition_racks)
        topic_index = {t: i for i, t in enumerate(topic_ids)}
        changed: dict[str, EncodedTarget] = {}
        for member_id in job.member_ids:
            new = {t: ps for t, ps in result.get(member_id, {}).items() if ps}
            if new != specs[member_id].current:
                changed[member_id] = encode_target(new, topic_index)
        error = None
    except PartitionAssignorError as exc:
        changed, error = {}, str(exc)
    except Exception as exc:  # any failure of a run is reported, never raised into the pool
        changed, error = {}, f"{type(exc).__name__}: {exc}"
    return AssignmentJobResult(job.job_id, job.group_id, job.epoch, changed, error)
