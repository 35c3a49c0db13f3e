"""Spec 7.1: computing a new target assignment with a server-side assignor.

Inputs are the members as they will be after the current heartbeat (a replaced static member
left out, its successor starting from its target), each with its subscription resolved to topic
ids through the group's subscription metadata and its current *target* as stickiness hint.
Output records: one target record per member whose target changed (always one for a member
without a target yet), then the assignment epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from coordinator.core.assignors import MemberSpec, PartitionAssignorError, SubscriptionType
from coordinator.core.consumer_group.errors import ConsumerGroupError
from coordinator.core.consumer_group.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer_group.records import assignment_epoch_record, target_assignment_record
from coordinator.core.consumer_group.state import ConsumerGroupsState
from coordinator.core.consumer_group.subscription import compute_subscription_type
from coordinator.core.consumer_group.topics import TopicId, TopicInfo
from coordinator.records import Record
from protocol.error_codes import ErrorCode


@dataclass(slots=True)
class TargetAssignmentResult:
    assignor: str
    subscription_type: SubscriptionType
    targets: dict[str, Assignment]  # member id -> new target, for every member
    records: list[Record] = field(default_factory=list)


def choose_assignor(state: ConsumerGroupsState, group: ConsumerGroup, members: Mapping[str, ConsumerMember]) -> str:
    """The assignor most members asked for, else the default (first of group.consumer.assignors)."""
    preferred = group.preferred_assignor(members.values())
    if preferred is None or preferred not in state.config.assignors:
        return state.config.default_assignor  # a stored choice the config no longer offers falls back
    return preferred


def compute_target_assignment(state: ConsumerGroupsState, group: ConsumerGroup, group_epoch: int,
                              members: Mapping[str, ConsumerMember], metadata: Mapping[str, TopicInfo],
                              current_targets: Mapping[str, Assignment]) -> TargetAssignmentResult:
    """Run the chosen assignor for `group_epoch`.

    `members` are the members after this heartbeat, `current_targets` their targets before it
    (member id -> target; a replacing static member under its new id). Raises UNKNOWN_SERVER_ERROR
    when the assignor fails; nothing is written then.
    """
    assignor_name = choose_assignor(state, group, members)
    # The assignors key topics by text; map back to the codec's topic ids afterwards.
    id_text = {t.topic_id: str(t.topic_id) for t in metadata.values()}
    topic_by_text: dict[str, TopicId] = {text: topic_id for topic_id, text in id_text.items()}
    interned: dict[frozenset[str], frozenset[str]] = {}
    specs: dict[str, MemberSpec] = {}
    for member_id, member in members.items():
        subscribed = frozenset(id_text[metadata[n].topic_id] for n in member.subscribed_topic_names if n in metadata)
        subscribed = interned.setdefault(subscribed, subscribed)  # one shared set per distinct subscription
        current = {str(t): ps for t, ps in current_targets.get(member_id, {}).items()}
        specs[member_id] = MemberSpec(subscribed, member.rack_id, member.instance_id, current)
    partition_counts = {id_text[t.topic_id]: t.num_partitions for t in metadata.values()}
    try:
        result = state.assignors[assignor_name].assign(specs, partition_counts)
    except PartitionAssignorError as exc:
        raise ConsumerGroupError(
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from exc

    targets: dict[str, Assignment] = {}
    records: list[Record] = []
    for member_id in sorted(members):
        new = {topic_by_text[t]: frozenset(ps) for t, ps in result.get(member_id, {}).items() if ps}
        targets[member_id] = new
        old = group.target_assignment.get(member_id)
        if old is None or old != new:
            records.append(target_assignment_record(group.group_id, member_id, new))
    records.append(assignment_epoch_record(group.group_id, group_epoch))
    return TargetAssignmentResult(assignor_name, compute_subscription_type(members.values()), targets, records)
