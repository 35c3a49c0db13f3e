"""In-memory model of a KIP-848 consumer group, changed only by replaying its records.

A ConsumerMember is immutable: handlers build updated copies (`dataclasses.replace`) and turn the
differences into records; `replay.replay_consumer_group_record` installs them. A ConsumerGroup
holds exactly what its records say, plus two derived indexes (static members, partition owners)
and one piece of soft state (the topic metadata version its subscription metadata was last
checked against).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any, ClassVar, Literal

from coordinator.core.consumer.regex import ResolvedRegex
from coordinator.core.consumer.topics import TopicId, TopicInfo
from coordinator.core.migration.classic_metadata import ClassicMemberMetadata
from coordinator.core.runtime.groups import GroupType

#: Partitions by topic id; topics without partitions are left out. Frozen sets, so members can share them.
Assignment = Mapping[TopicId, frozenset[int]]
EMPTY_ASSIGNMENT: Assignment = {}

JOIN_EPOCH = 0
LEAVE_EPOCH = -1  # also what replay sets when a member's current assignment is tombstoned
STATIC_LEAVE_EPOCH = -2


class MemberState(IntEnum):
    """Reconciliation state of a member, persisted as int8 (docs/spec/consumer-protocol.md#reconciliation)."""

    STABLE = 0  # owns its whole assignment at its epoch; reconciled when that epoch is the assignment epoch
    UNREVOKED_PARTITIONS = 1  # must give back partitions before it may move to a new epoch
    UNRELEASED_PARTITIONS = 2  # at the new epoch, waiting for partitions other members still hold
    UNKNOWN = 127  # written by a newer version; the member is fenced unless it owns nothing

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class ConsumerGroupState(Enum):
    """Derived after every change (docs/spec/consumer-protocol.md#group-states); the values are the wire strings of
    ListGroups/Describe."""

    EMPTY = "Empty"  # no members
    ASSIGNING = "Assigning"  # the group epoch is ahead of the assignment epoch
    RECONCILING = "Reconciling"  # some member is not STABLE at the assignment epoch
    STABLE = "Stable"  # every member is STABLE at the assignment epoch
    DEAD = "Dead"  # reserved


def assignment_of(pairs: Iterable[tuple[TopicId, Iterable[int]]]) -> dict[TopicId, frozenset[int]]:
    """An Assignment from (topic id, partitions) pairs; empty topics dropped, repeated topics merged."""
    out: dict[TopicId, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


def partitions_of(assignment: Assignment) -> set[tuple[TopicId, int]]:
    return {(topic_id, p) for topic_id, partitions in assignment.items() for p in partitions}


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    # metadata (ConsumerGroupMemberMetadata record)
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()  # sorted and unique, as the record keeps them
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    # current assignment (ConsumerGroupCurrentMemberAssignment record)
    member_epoch: int = JOIN_EPOCH
    previous_member_epoch: int = JOIN_EPOCH
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    # classic-protocol members only (docs/spec/consumer-protocol.md#classic-members; also in the member metadata record)
    classic: ClassicMemberMetadata | None = None
    # derived: the topics the group resolved `subscribed_topic_regex` to (sorted; from the type 16 records)
    regex_topics: tuple[str, ...] = ()

    @property
    def subscribed_topics(self) -> tuple[str, ...]:
        """Every topic the member subscribes to, sorted: its names and what its regular expression resolved to."""
        if not self.regex_topics:
            return self.subscribed_topic_names
        if not self.subscribed_topic_names:
            return self.regex_topics
        return tuple(sorted(set(self.subscribed_topic_names).union(self.regex_topics)))

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch

    def metadata_fields(self) -> tuple[Any, ...]:
        """What the member metadata record carries: a change here means a new record."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_fields(self) -> tuple[Any, ...]:
        """What the current assignment record carries."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned_partitions,
                self.partitions_pending_revocation)

    def held_partitions(self) -> set[tuple[TopicId, int]]:
        """Partitions no other member may be given: assigned or still pending revocation."""
        return partitions_of(self.assigned_partitions) | partitions_of(self.partitions_pending_revocation)


@dataclass(slots=True, eq=False)
class ConsumerGroup:
    group_type: ClassVar[Literal[GroupType.CONSUMER]] = GroupType.CONSUMER
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0  # -1 once the target assignment metadata was tombstoned
    # KIP-1263: when the last target assignment computation finished (0: never, or the group emptied)
    assignment_timestamp_ms: int = 0
    subscription_metadata: dict[str, TopicInfo] = field(default_factory=dict)  # topic name -> metadata
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)  # member id -> target
    resolved_regexes: dict[str, ResolvedRegex] = field(default_factory=dict)  # regular expression -> resolution
    # derived from members, kept up to date by `put_member` / `remove_member`
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    partition_owners: dict[tuple[TopicId, int], str] = field(default_factory=dict)
    # soft state: the TopicsView version the subscription metadata was last checked against
    checked_metadata_version: int | None = None
    # soft state: the TopicsView version the regular expressions were last resolved against in this process
    regex_checked_version: int | None = None

    # ---- queries -------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if all(m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_for(self, member_id: str, instance_id: str | None) -> Assignment:
        """A member's target; a static member replacing another starts from the previous holder's."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None and previous != member_id:
                return self.target_assignment.get(previous, EMPTY_ASSIGNMENT)
        return self.target_assignment.get(member_id, EMPTY_ASSIGNMENT)

    def is_held(self, topic_id: TopicId, partition: int) -> bool:
        return (topic_id, partition) in self.partition_owners

    def subscribed_topic_names(self) -> set[str]:
        """Every topic some member subscribes to, by name or through its regular expression."""
        # Subscription tuples are interned on replay: one pass per distinct tuple, not per member.
        distinct = {id(names): names for names in (m.subscribed_topics for m in self.members.values())}
        return {name for names in distinct.values() for name in names}

    def preferred_assignor(self, members: Iterable[ConsumerMember] | None = None) -> str | None:
        """The server assignor most members asked for; ties go to the alphabetically first name."""
        votes = Counter(m.server_assignor for m in (self.members.values() if members is None else members)
                        if m.server_assignor is not None)
        if not votes:
            return None
        return min(votes, key=lambda name: (-votes[name], name))

    # ---- changes (called by replay only) -------------------------------------------------------

    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        held = member.held_partitions()
        clashes = sorted((str(t), p, self.partition_owners[(t, p)]) for t, p in held if (t, p) in self.partition_owners)
        if clashes:
            if old is not None:
                self._hold(old)  # leave the group as it was
            raise ValueError(f"group {self.group_id}: member {member.member_id} would own partitions "
                             f"still held by other members: {clashes}")
        self.members[member.member_id] = member
        for tp in held:
            self.partition_owners[tp] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id)
        self._release(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def _release(self, member: ConsumerMember) -> None:
        for tp in member.held_partitions():
            if self.partition_owners.get(tp) == member.member_id:
                del self.partition_owners[tp]

    def _hold(self, member: ConsumerMember) -> None:
        for tp in member.held_partitions():
            self.partition_owners[tp] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
