"""The consumer group core's TopicsView over the broker's TopicRegistry (read at call time, no copy)."""

from __future__ import annotations

import uuid

from coordinator.core.consumer_group import TopicInfo
from coordinator.topics import Topic, TopicRegistry


class RegistryTopics:
    """Live view: `version` is the registry's, which changes on every create and delete."""

    __slots__ = ("registry",)

    def __init__(self, registry: TopicRegistry) -> None:
        self.registry = registry

    @property
    def version(self) -> int:
        return self.registry.version

    def by_name(self, name: str) -> TopicInfo | None:
        return _info(self.registry.get(name))

    def by_id(self, topic_id: object) -> TopicInfo | None:
        return _info(self.registry.by_id(topic_id)) if isinstance(topic_id, uuid.UUID) else None


def _info(topic: Topic | None) -> TopicInfo | None:
    return None if topic is None else TopicInfo(topic.topic_id, topic.name, topic.partitions)
