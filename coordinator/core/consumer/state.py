"""The consumer protocol's soft state types: an assignor run in flight and a heartbeat parked on it.

They are held in the shard's one state (`coordinator.core.runtime.shard_state.ShardState.runs`
and `.waiters`), beside every other group type's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.core.consumer.model import Assignment, ConsumerMember
from coordinator.core.consumer.topics import TopicInfo
from coordinator.core.runtime.context import RequestRef


@dataclass(slots=True)
class AssignmentRun:
    """An assignor run in flight: which job, for which group epoch, and what it saw of the group."""

    job_id: int
    epoch: int
    started_ms: int
    # member id -> subscribed topic names as the job saw them (the same tuple objects), and the
    # subscription metadata object: a change since then is a missed change to apply on landing.
    subscriptions: dict[str, tuple[str, ...]]
    metadata: Mapping[str, TopicInfo]
    instance_ids: dict[str, str]  # instance id -> member id, as the job saw them
    topic_ids: tuple[str, ...]  # the job's topic table, to decode its result


@dataclass(slots=True)
class Waiter:
    """A heartbeat parked until its group's run lands (or `assignment_wait_ms` passes)."""

    ref: RequestRef
    member_id: str
    member: ConsumerMember  # the member as the provisional answer left it
    before_assigned: Assignment  # what the client was known to own before the request
    owned: Assignment | None  # what the request reported owning
    full: bool
    provisional: Any  # the answer it gets if the run does not land in time
