"""Topic-level settings: their names, types and the broker settings that give their defaults."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.config import Config


@dataclass(frozen=True, slots=True)
class TopicSetting:
    name: str
    kind: str  # "int", "long", "string", "list"
    broker_default: str | None  # the broker setting supplying the default, if any
    default: str
    doc: str


TOPIC_SETTINGS: dict[str, TopicSetting] = {s.name: s for s in (
    TopicSetting("cleanup.policy", "list", "log.cleanup.policy", "delete", "delete or compact"),
    TopicSetting("retention.ms", "long", "log.retention.ms", "604800000", "How long records are kept (-1: forever)."),
    TopicSetting("retention.bytes", "long", "log.retention.bytes", "-1", "Largest size of a partition (-1: no limit)."),
    TopicSetting("segment.bytes", "int", "log.segment.bytes", "1073741824", "Segment size at which the log rolls."),
    TopicSetting("segment.ms", "long", "log.roll.ms", "604800000",
                 "Age at which a non-empty active segment rolls, so that retention and compaction reach it."),
    TopicSetting("delete.retention.ms", "long", None, "86400000", "How long tombstones stay in compacted topics."),
    TopicSetting("min.insync.replicas", "int", None, "1", "Replicas that must acknowledge acks=-1 (one node: 1)."),
    TopicSetting("max.message.bytes", "int", None, "1048588", "Largest record batch accepted."),
    TopicSetting("message.timestamp.type", "string", None, "CreateTime", "CreateTime or LogAppendTime."),
    TopicSetting("compression.type", "string", None, "producer", "Batches are stored as the producer sent them."),
)}


def validate_topic_config(name: str, value: str | None) -> str | None:
    """An error message for an unknown setting or a bad value, else None."""
    setting = TOPIC_SETTINGS.get(name)
    if setting is None:
        return f"unknown topic setting {name!r}; known: {', '.join(sorted(TOPIC_SETTINGS))}"
    if value is None:
        return f"{name}: a value is required"
    if setting.kind in ("int", "long"):
        try:
            int(value)
        except ValueError:
            return f"{name}: expected an integer, got {value!r}"
    if name == "cleanup.policy" and not set(v.strip() for v in value.split(",")) <= {"delete", "compact"}:
        return f"cleanup.policy: expected delete, compact or both, got {value!r}"
    return None


def topic_default(config: Config, setting: TopicSetting) -> str:
    if setting.broker_default is not None:
        return config.raw(setting.broker_default)
    return setting.default
