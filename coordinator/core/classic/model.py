"""In-memory model of a classic group: members, protocols, parked requests.

A ClassicGroup is the live view. What survives a restart is only what its
GroupMetadata records carry (see `coordinator.records.group_metadata_value`);
everything else here (parked requests, pending members, the generation in
progress) is soft state rebuilt by the next rebalance.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from coordinator.core.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    subscribed_topics,
)
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.context import RequestRef
from coordinator.core.runtime.groups import GroupType

Protocols = tuple[tuple[str, bytes], ...]  # (name, metadata) in the client's preference order


@dataclass(frozen=True, slots=True)
class Parked:
    """A request waiting for the group; the version decides the response's shape."""

    ref: RequestRef
    api_version: int


@dataclass(slots=True, eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: Parked | None = None
    awaiting_sync: Parked | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The first protocol of this member's own preference list that everybody supports."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True, eq=False)
class ClassicGroup:
    group_type: ClassVar[Literal[GroupType.CLASSIC]] = GroupType.CLASSIC
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    state_since_ms: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)  # insertion order decides leader fallback
    static_members: dict[str, str] = field(default_factory=dict)  # group instance id -> member id
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None  # None: unknown
    # How many members list each protocol, kept up to date as members come, go and change their
    # protocols (recounting on every join made a join storm quadratic). None: count on next use.
    _support: Counter[str] | None = None

    # -- queries ---------------------------------------------------------------------------------

    def all_members(self) -> list[Member]:
        return list(self.members.values())

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return not self.pending_join_members and all(m.awaiting_join is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        return None if group_instance_id is None else self.static_members.get(group_instance_id)

    def protocol_support(self) -> Counter[str]:
        # A member counts once per protocol even if its list names one twice (found by the fuzzer:
        # Kafka counts duplicates, so a protocol could look supported by all and fail the vote).
        if self._support is None:
            self._support = Counter(name for m in self.members.values() for name in set(m.protocol_names()))
        return self._support

    def set_protocols(self, member: Member, protocols: Protocols) -> None:
        """Change a member's protocols, keeping the support counts right."""
        if self._support is not None and member.member_id in self.members:
            self._support.subtract(set(member.protocol_names()))
            self._support.update({name for name, _ in protocols})
            self._support += Counter()  # drop protocols nobody lists any more
        member.protocols = protocols

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Kafka's join-time check. Counts include a rejoining member's *old* protocols (a quirk)."""
        if self.state is GroupState.EMPTY:
            return protocol_type != "" and bool(names)
        support = self.protocol_support()
        return self.protocol_type == protocol_type and any(support[n] == len(self.members) for n in names)

    def select_protocol(self) -> str:
        """The vote: each member picks its first candidate; most votes wins.

        Kafka breaks ties by hash order; we break them by the leader's preference, then by name.
        """
        support = self.protocol_support()
        candidates = {name for name, count in support.items() if count == len(self.members)}
        votes = Counter(m.vote(candidates) for m in self.members.values())
        leader = self.members.get(self.leader_id or "")
        preference = leader.protocol_names() if leader else []

        def rank(name: str) -> tuple[int, int, str]:
            pref = preference.index(name) if name in preference else len(preference)
            return (-votes[name], pref, name)

        return min(votes, key=rank)

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(subscribed_topics(m.metadata(self.protocol_name)))
        except ValueError:
            return None  # unparsable metadata: the coordinator does not know the subscription
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    # -- membership changes (soft state) ---------------------------------------------------------

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self._support is not None:
            replaced = self.members.get(member.member_id)
            if replaced is not None:
                self._support.subtract(set(replaced.protocol_names()))
            self._support.update(set(member.protocol_names()))
            self._support += Counter()
        self.members[member.member_id] = member
        if self.leader_id is None:
            self.leader_id = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        removed = self.members.pop(member_id, None)
        if removed is not None and self._support is not None:
            self._support.subtract(set(removed.protocol_names()))
            self._support += Counter()
        if (removed is not None and removed.group_instance_id is not None
                and self.static_members.get(removed.group_instance_id) == member_id):
            del self.static_members[removed.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return removed

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick the first member that did. False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False
