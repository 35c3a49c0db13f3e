"""The one map of a shard's groups, whatever their type (Kafka's GroupMetadataManager.groups)."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING, Union

from coordinator.core.runtime.errors import ApiError
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:  # the group types import GroupType from here
    from coordinator.core.classic.model import ClassicGroup
    from coordinator.core.consumer.model import ConsumerGroup
    from coordinator.core.share.model import ShareGroup


class GroupType(Enum):
    """Each group class says its type (Kafka's Group.type()); the map's typed getters check it."""

    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


# Module constants: the getters are on every request's path, a global is cheaper than an enum lookup.
_CLASSIC = GroupType.CLASSIC
_CONSUMER = GroupType.CONSUMER
_SHARE = GroupType.SHARE

#: Every group type a shard holds; a new type (share groups) joins this union, GroupType and the getters.
Group = Union["ClassicGroup", "ConsumerGroup", "ShareGroup"]


class GroupMap(dict[str, Group]):
    """Group id -> group: one namespace for every type, so an id names at most one group.

    The typed getters answer None for an absent id and for an id held by a group of another type;
    the handler then answers the error its API gives, as Kafka's getOrMaybeCreate* methods do
    (GROUP_ID_NOT_FOUND for a consumer-group API naming a classic group, and so on).
    """

    __slots__ = ()

    def classic(self, group_id: str) -> ClassicGroup | None:
        group = self.get(group_id)
        # The group_type tag narrows the union; mypy cannot see it through the module constant.
        return group if group is not None and group.group_type is _CLASSIC else None  # type: ignore[return-value]

    def consumer(self, group_id: str) -> ConsumerGroup | None:
        group = self.get(group_id)
        return group if group is not None and group.group_type is _CONSUMER else None  # type: ignore[return-value]

    def share(self, group_id: str) -> ShareGroup | None:
        group = self.get(group_id)
        return group if group is not None and group.group_type is _SHARE else None  # type: ignore[return-value]

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        """The consumer group `group_id`; GROUP_ID_NOT_FOUND otherwise (Kafka's consumerGroup)."""
        group = self.consumer(group_id)
        if group is None:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return group

    def classic_groups(self) -> Iterator[ClassicGroup]:
        return (group for group in self.values() if group.group_type is GroupType.CLASSIC)

    def consumer_groups(self) -> Iterator[ConsumerGroup]:
        return (group for group in self.values() if group.group_type is GroupType.CONSUMER)

    def share_groups(self) -> Iterator[ShareGroup]:
        return (group for group in self.values() if group.group_type is GroupType.SHARE)
