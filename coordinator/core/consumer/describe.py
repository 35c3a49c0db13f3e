"""docs/spec/consumer-protocol.md#describe and docs/spec/consumer-protocol.md#group-states: ConsumerGroupDescribe v0 and
the ListGroups view of consumer groups.

Reads see only durable state (the groups here are exactly what replay built).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from coordinator.core.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer.target import choose_assignor
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.runtime.shard_state import ShardState
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ListGroupsResponse,
)

CONSUMER_GROUP_TYPE = "consumer"  # ListGroups GroupType, and ProtocolType of consumer groups
_Group = ConsumerGroupDescribeResponse.DescribedGroup
_Member = ConsumerGroupDescribeResponse.Member
_Assignment = ConsumerGroupDescribeResponse.Assignment
_TopicPartitions = ConsumerGroupDescribeResponse.TopicPartitions


def consumer_group_describe(state: ShardState, req: ConsumerGroupDescribeRequest,
                            topics: TopicsView) -> ConsumerGroupDescribeResponse:
    """One entry per requested id. AuthorizedOperations is left at its default: the shell, which
    knows the ACLs, fills it in when IncludeAuthorizedOperations is set (and answers
    GROUP_AUTHORIZATION_FAILED for groups the principal may not describe)."""
    return ConsumerGroupDescribeResponse(groups=[describe_group(state, gid, topics) for gid in req.group_ids])


def describe_group(state: ShardState, group_id: str | None, topics: TopicsView) -> _Group:
    if not group_id:
        # Kafka 4.4 answers it without a message; GroupId is not nullable on the wire.
        return _Group(error_code=ErrorCode.INVALID_GROUP_ID, group_id="")
    group = state.groups.consumer(group_id)
    if group is None:
        kind = "is not a consumer group" if group_id in state.groups else "not found"
        return _Group(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} {kind}.",
                      group_id=group_id)
    return _Group(
        error_code=ErrorCode.NONE, group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=choose_assignor(state, group, group.members),
        members=[_describe_member(group, m, topics) for _, m in sorted(group.members.items())])


CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1


def _describe_member(group: ConsumerGroup, member: ConsumerMember, topics: TopicsView) -> _Member:
    return _Member(
        member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
        member_epoch=member.member_epoch, client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        # Kafka 4.4 describes a member subscribed by names with "", not null (seen by tests/differential).
        subscribed_topic_regex=member.subscribed_topic_regex or "",
        assignment=_with_names(member.assigned_partitions, topics),
        target_assignment=_with_names(group.target_assignment.get(member.member_id, {}), topics),
        # v1 (KIP-1099): 0 for a member still on the classic protocol, 1 for a consumer-protocol one
        # (Kafka's ConsumerGroupMember.asConsumerGroupDescribeMember); admin clients show 1 as `upgraded`.
        member_type=CLASSIC_MEMBER_TYPE if member.uses_classic_protocol else CONSUMER_MEMBER_TYPE)


def _with_names(assignment: Assignment, topics: TopicsView) -> _Assignment:
    """Topics the cluster no longer knows are left out, as Kafka does (it has no name for them)."""
    entries = []
    for topic_id in sorted(assignment, key=str):
        info = topics.by_id(topic_id)
        if info is not None:
            entries.append(_TopicPartitions(topic_id=topic_id, topic_name=info.name,
                                            partitions=sorted(assignment[topic_id])))
    return _Assignment(topic_partitions=entries)


def listed_consumer_groups(state: ShardState, states_filter: Collection[str] = (),
                           types_filter: Collection[str] = ()) -> list[ListGroupsResponse.ListedGroup]:
    """ListGroups entries (v4 state filter, v5 type filter; filters compare case-insensitively)."""
    wanted_states = {s.lower() for s in states_filter}
    wanted_types = {t.lower() for t in types_filter}
    if wanted_types and CONSUMER_GROUP_TYPE not in wanted_types:
        return []
    return [ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=CONSUMER_GROUP_TYPE,
                                           group_state=state_name, group_type=CONSUMER_GROUP_TYPE)
            for gid, state_name in _states(state.groups.consumer_groups())
            if not wanted_states or state_name.lower() in wanted_states]


def _states(groups: Iterable[ConsumerGroup]) -> list[tuple[str, str]]:
    return sorted((g.group_id, g.state.value) for g in groups)
