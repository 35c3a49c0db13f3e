"""Topic-level settings: their names, types, the broker settings that give their defaults, and
Kafka's validation of their values (LogConfig's ConfigDef: types, lower bounds, allowed values)."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.config import SETTINGS_BY_NAME, Config

_INT32_MAX, _INT64_MAX = 2**31 - 1, 2**63 - 1


@dataclass(frozen=True, slots=True)
class TopicSetting:
    name: str
    kind: str  # "int", "long", "string", "list"
    broker_default: str | None  # the broker setting supplying the default, if any
    default: str
    doc: str
    minimum: int | None = None  # Kafka's atLeast(n)
    choices: tuple[str, ...] = ()  # Kafka's ValidString.in / ValidList.in
    # The Kafka broker setting DescribeConfigs names as the DEFAULT_CONFIG synonym, and its value there
    # when it is not the built-in default in other units (log.retention.hours=168).
    default_synonym: str | None = None
    default_synonym_value: str | None = None

    @property
    def default_synonym_shown_alone(self) -> bool:
        """Kafka's ConfigHelper.configSynonyms drops the synonyms before the first one named like the
        primary broker setting: an hours-valued default (log.retention.hours) shows only after a
        log.retention.ms set on the broker, never alone."""
        return self.default_synonym == (self.broker_default or self.default_synonym)


TOPIC_SETTINGS: dict[str, TopicSetting] = {s.name: s for s in (
    TopicSetting("cleanup.policy", "list", "log.cleanup.policy", "delete", "delete or compact",
                 default_synonym="log.cleanup.policy",
                 choices=("compact", "delete")),
    TopicSetting("retention.ms", "long", "log.retention.ms", "604800000", "How long records are kept (-1: forever).",
                 minimum=-1, default_synonym="log.retention.hours", default_synonym_value="168"),
    TopicSetting("retention.bytes", "long", "log.retention.bytes", "-1", "Largest size of a partition (-1: no limit).",
                 default_synonym="log.retention.bytes"),
    # Kafka 4.x: at least 1 MiB per topic (smaller segments only through the broker's log.segment.bytes).
    TopicSetting("segment.bytes", "int", "log.segment.bytes", "1073741824", "Segment size at which the log rolls.",
                 minimum=1048576, default_synonym="log.segment.bytes"),
    TopicSetting("segment.ms", "long", "log.roll.ms", "604800000",
                 "Age at which a non-empty active segment rolls, so that retention and compaction reach it.",
                 minimum=1, default_synonym="log.roll.hours", default_synonym_value="168"),
    TopicSetting("delete.retention.ms", "long", None, "86400000", "How long tombstones stay in compacted topics.",
                 minimum=0, default_synonym="log.cleaner.delete.retention.ms"),
    TopicSetting("min.compaction.lag.ms", "long", None, "0",
                 "Records stay uncompacted at least this long (whole segments: their newest record counts).",
                 minimum=0, default_synonym="log.cleaner.min.compaction.lag.ms"),
    TopicSetting("min.insync.replicas", "int", None, "1", "Replicas that must acknowledge acks=-1 (one node: 1).",
                 minimum=1, default_synonym="min.insync.replicas"),
    TopicSetting("max.message.bytes", "int", None, "1048588", "Largest record batch accepted.", minimum=0,
                 default_synonym="message.max.bytes"),
    TopicSetting("message.timestamp.type", "string", None, "CreateTime", "CreateTime or LogAppendTime.",
                 choices=("CreateTime", "LogAppendTime"), default_synonym="log.message.timestamp.type"),
    TopicSetting("compression.type", "string", None, "producer", "Batches are stored as the producer sent them.",
                 choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
                 default_synonym="compression.type"),
)}

_BOUNDS = {"int": (-(2**31), _INT32_MAX), "long": (-(2**63), _INT64_MAX)}


def validate_topic_config(name: str, value: str | None) -> str | None:
    """An error message for an unknown setting or a bad value, else None (Kafka's wording)."""
    setting = TOPIC_SETTINGS.get(name)
    if setting is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    if setting.kind in _BOUNDS:
        low, high = _BOUNDS[setting.kind]
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if number is None or not low <= number <= high:
            return f"Invalid value {value} for configuration {name}: Not a number of type {setting.kind.upper()}"
        if setting.minimum is not None and number < setting.minimum:
            return f"Invalid value {value} for configuration {name}: Value must be at least {setting.minimum}"
    elif setting.kind == "list":
        items = [v.strip() for v in value.split(",") if v.strip()]  # Kafka 4.x accepts an empty list
        if any(v not in setting.choices for v in items):
            return (f"Invalid value {value} for configuration {name}: String must be one of: "
                    f"{', '.join(setting.choices)}")
    elif setting.choices and value not in setting.choices:
        return f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(setting.choices)}"
    return None


def validate_topic_configs(configs: dict[str, str]) -> str | None:
    """The first problem of a topic's whole set of overrides, else None."""
    for name, value in configs.items():
        problem = validate_topic_config(name, value)
        if problem:
            return problem
    return None


def builtin_default(setting: TopicSetting) -> str:
    """The value when neither the topic nor the broker's configuration sets it."""
    return SETTINGS_BY_NAME[setting.broker_default].default if setting.broker_default else setting.default


def topic_default(config: Config, setting: TopicSetting) -> str:
    if setting.broker_default is not None:
        return config.raw(setting.broker_default)
    return setting.default
