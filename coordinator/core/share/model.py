"""Share groups (KIP-932): members, epochs and the target assignment of one group.

Durable through the share group records (types 10-15; coordinator/records/share.py), which the
share group coordinator replays; the share-partitions' delivery state is the shell's
(server/share_partitions.py, over `__share_group_state`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Literal

from coordinator.core.runtime.groups import GroupType
from protocol.primitives import Uuid

TopicId = Uuid
Assignment = dict[TopicId, frozenset[int]]


class ShareGroupState(Enum):
    """As ShareGroupDescribe and ListGroups name them."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assignment: Assignment = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InitializedTopic:
    name: str
    partitions: frozenset[int]


@dataclass(slots=True)
class ShareGroup:
    group_type: ClassVar[Literal[GroupType.SHARE]] = GroupType.SHARE

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    # of the subscribed topics' names, ids and partition counts (record 11): a change bumps the group epoch
    metadata_hash: int = 0
    # share-partitions with durable state (record 15's initialized topics): only these are assigned
    initialized: dict[TopicId, InitializedTopic] = field(default_factory=dict)

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> set[str]:
        return {name for member in self.members.values() for name in member.subscribed_topic_names}
