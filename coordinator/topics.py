"""The topic registry: names, ids and partition counts of the topics this node hosts.

Kept in memory and, when given a directory, in a small JSON file written
atomically, so topic ids survive restarts.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


class TopicError(Exception):
    def __init__(self, code_name: str, message: str) -> None:
        super().__init__(message)
        self.code_name = code_name  # an ErrorCode member name


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate, with its messages."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL.match(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return
    raise TopicError("INVALID_TOPIC_EXCEPTION", f"Topic name is invalid: {reason}")


@dataclass(frozen=True, slots=True)
class TopicChange:
    """What listeners hear after a change: `kind` is "created", "deleted" or "grown"; `version` the registry's."""

    kind: str
    name: str
    version: int


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False
    configs: dict[str, str] = field(default_factory=dict)


class TopicRegistry:
    def __init__(self, directory: Path | None = None, new_id: Callable[[], uuid.UUID] = uuid.uuid4,
                 id_for_name: Callable[[str], uuid.UUID] | None = None) -> None:
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._new_id = new_id
        # A cluster's nodes each keep a registry: the id comes from the name so that they agree.
        self._id_for_name = id_for_name
        # Bumped on every create and delete: consumer groups recheck their topics when it moves.
        self.version = 0
        self._listeners: list[Callable[[TopicChange], None]] = []
        self._file = directory / "topics.json" if directory is not None else None
        if self._file is not None and self._file.exists():
            for raw in json.loads(self._file.read_text()):
                self._add(Topic(raw["name"], uuid.UUID(raw["id"]), raw["partitions"], raw.get("internal", False),
                                raw.get("configs", {})))

    def _add(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.version += 1

    def on_change(self, listener: Callable[[TopicChange], None]) -> None:
        """Call `listener` after every create, delete and partition growth (the group coordinator's shards
        hear of topic changes this way)."""
        self._listeners.append(listener)

    def _notify(self, kind: str, name: str) -> None:
        change = TopicChange(kind, name, self.version)
        for listener in self._listeners:
            listener(change)

    def _save(self) -> None:
        if self._file is None:
            return
        data = [{"name": t.name, "id": str(t.topic_id), "partitions": t.partitions, "internal": t.internal,
                 "configs": t.configs} for t in self._topics.values()]
        tmp = self._file.with_suffix(".tmp")
        with open(tmp, "w") as out:
            json.dump(data, out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._file)

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self._topics.values()))

    def __contains__(self, name: str) -> bool:
        return name in self._topics

    def create(self, name: str, partitions: int, configs: dict[str, str] | None = None,
               internal: bool = False, validate_only: bool = False) -> Topic:
        validate_topic_name(name)
        if name in self._topics:
            raise TopicError("TOPIC_ALREADY_EXISTS", f"topic {name!r} already exists")
        if partitions < 1:
            raise TopicError("INVALID_PARTITIONS", f"number of partitions must be at least 1, got {partitions}")
        topic_id = self._id_for_name(name) if self._id_for_name is not None else self._new_id()
        topic = Topic(name, topic_id, partitions, internal, dict(configs or {}))
        if not validate_only:
            self._add(topic)
            self._save()
            self._notify("created", name)
        return topic

    def set_configs(self, name: str, configs: dict[str, str]) -> Topic:
        """Replace the topic's own settings, durably (fsync, atomic rename); on failure nothing changes."""
        topic = self._topics.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        previous, topic.configs = topic.configs, dict(configs)
        try:
            self._save()
        except OSError:
            topic.configs = previous
            raise
        return topic

    def add_partitions(self, name: str, count: int) -> Topic:
        """Grow the topic to `count` partitions, durably (on failure nothing changes); the caller checked that
        `count` is more than it has. New partitions start empty; listeners hear "grown"."""
        topic = self._topics.get(name)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"The topic '{name}' does not exist.")
        if count <= topic.partitions:
            raise TopicError("INVALID_PARTITIONS", f"The topic {name} currently has {topic.partitions} partition(s); "
                                                   f"{count} would not be an increase.")
        previous, topic.partitions = topic.partitions, count
        try:
            self._save()
        except OSError:
            topic.partitions = previous
            raise
        self.version += 1
        self._notify("grown", name)
        return topic

    def delete(self, name: str) -> Topic:
        topic = self._topics.pop(name, None)
        if topic is None:
            raise TopicError("UNKNOWN_TOPIC_OR_PARTITION", f"unknown topic {name!r}")
        del self._by_id[topic.topic_id]
        self.version += 1
        self._save()
        self._notify("deleted", name)
        return topic
