"""The topic metadata a heartbeat needs, handed in by the caller (the core does no I/O).

The shell owns the topic registry; each call into the consumer group core passes a read-only
`TopicsView`. `version` lets a group skip recomputing its subscription metadata when nothing
changed: it must change whenever a topic is created, deleted or changes its partition count
(Kafka refreshes a group's metadata on the next heartbeat after such a change;
docs/spec/consumer-protocol.md#group-epoch-bumps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from protocol.primitives import Uuid

# The uuid.UUID objects the codec decodes. The core treats them as opaque values ordered by
# their text; it names their type through the codec (tests/core/test_purity.py forbids uuid).
TopicId = Uuid


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: TopicId
    name: str
    num_partitions: int
    # Racks of each partition's replicas, for the rack-aware assignors; () when unknown, as on a
    # single node (where every partition would have the same racks, which changes nothing).
    replica_racks: tuple[frozenset[str], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicsChanged:
    """The shell's event when topics are created, deleted or grow (Kafka's onNewMetadataImage): `version` is
    the TopicsView version that has the change."""

    version: int
    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    grown: tuple[str, ...] = ()


class TopicsView(Protocol):
    """What the consumer group core reads about topics."""

    @property
    def version(self) -> int: ...

    def by_name(self, name: str) -> TopicInfo | None: ...

    def by_id(self, topic_id: TopicId) -> TopicInfo | None: ...

    def names(self) -> Iterable[str]:
        """Every topic's name: regular expression subscriptions are resolved against them."""
        ...


@dataclass(frozen=True, slots=True)
class TopicsSnapshot:
    """A TopicsView over plain dicts; build a new one (with a new version) after each change."""

    version: int = 0
    _by_name: Mapping[str, TopicInfo] = field(default_factory=dict)
    _by_id: Mapping[TopicId, TopicInfo] = field(default_factory=dict)

    @classmethod
    def of(cls, topics: Mapping[str, tuple[TopicId, int]], version: int = 0) -> TopicsSnapshot:
        """From name -> (topic id, partition count)."""
        infos = [TopicInfo(topic_id, name, count) for name, (topic_id, count) in topics.items()]
        return cls.from_infos(infos, version)

    @classmethod
    def from_infos(cls, infos: Iterable[TopicInfo], version: int = 0) -> TopicsSnapshot:
        infos = list(infos)
        return cls(version, {t.name: t for t in infos}, {t.topic_id: t for t in infos})

    def by_name(self, name: str) -> TopicInfo | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: TopicId) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def names(self) -> Iterable[str]:
        return self._by_name.keys()
