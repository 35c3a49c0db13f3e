"""Group-level settings (Kafka's GROUP config resource): names, broker synonyms, validation.

The consumer-protocol and share group settings of Kafka 4.4's `GroupConfig`: each integer one
overrides, for one group, the broker setting named `group.` + its name. Kafka's rules (apache/kafka
`GroupConfig.validate`/`validateValues`, `ControllerConfigurationValidator`,
`ConfigurationControlManager`), all answered INVALID_CONFIG:

* an unknown name: "Unknown group config name: X";
* a value that is not an int32: "Invalid value V for configuration X: Not a number of type INT";
* below the type's floor (ConfigDef atLeast): "... Value must be at least N";
* a string outside its choices (share.isolation.level, share.auto.offset.reset): ConfigDef's words;
* outside the broker's min/max bounds (group.consumer.min/max.*, group.share.min/max.*):
  "X must be in the range A to B inclusive.", checked in validateValues' order;
* a session timeout not above the heartbeat interval (either side from the broker when not set
  for the group): "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms",
  and the same for share.*.

The whole resulting set of a group is checked, not only what a request changes. Kafka also has
`streams.*`, the assignor offload/interval settings of share groups and dead-letter-queue group
settings; this server has no streams groups, offloads per broker only and
has no DLQ, so those names are unknown here. A stored value that a later, narrower broker bound
excludes is clamped when used (Kafka's `GroupConfig.evaluate`), see `effective_overrides`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from coordinator.config import Config
from coordinator.core.consumer.group_configs import GroupConfigOverrides

log = structlog.get_logger()

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, slots=True)
class GroupSetting:
    """An integer group setting: its type floor, its broker default and the broker's bounds."""

    name: str  # e.g. consumer.session.timeout.ms
    floor: int  # the type's own lower bound (ConfigDef atLeast)
    doc: str
    bounds: tuple[str, str]  # the broker settings bounding it (min, max)

    @property
    def broker_synonym(self) -> str:
        """The broker setting giving the default: Kafka's GroupCoordinatorConfig.GROUP_PREFIX + name."""
        return "group." + self.name


@dataclass(frozen=True, slots=True)
class StringGroupSetting:
    """A string or boolean group setting with no broker synonym: its default is GroupConfig's own."""

    name: str
    default: str
    doc: str
    config_type: str = "string"  # or "boolean"


def _bounded(name: str, floor: int, doc: str) -> GroupSetting:
    kind, rest = name.split(".", 1)  # consumer.session.timeout.ms -> group.consumer.min.session.timeout.ms
    return GroupSetting(name, floor, doc, (f"group.{kind}.min.{rest}", f"group.{kind}.max.{rest}"))


SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_PARTITION_MAX_RECORD_LOCKS = "share.partition.max.record.locks"

GROUP_SETTINGS: dict[str, GroupSetting] = {s.name: s for s in (
    _bounded(ASSIGNMENT_INTERVAL, 0, "Least time between two target assignment computations of this group (KIP-1263)."),
    _bounded(HEARTBEAT_INTERVAL, 1, "Heartbeat interval given to this group's consumer-protocol members."),
    _bounded(SESSION_TIMEOUT, 1, "Session timeout of this group's consumer-protocol members."),
    _bounded(SHARE_SESSION_TIMEOUT, 1, "Session timeout of this share group's members."),
    _bounded(SHARE_HEARTBEAT_INTERVAL, 1, "Heartbeat interval given to this share group's members."),
    _bounded(SHARE_RECORD_LOCK_DURATION, 1000, "How long a member of this share group holds the records it acquired."),
    _bounded(SHARE_DELIVERY_COUNT_LIMIT, 2, "Deliveries of a record to this share group before it is archived."),
    _bounded(SHARE_PARTITION_MAX_RECORD_LOCKS, 100, "Most records in flight per share-partition of this share group."),
)}

# Share groups (KIP-932): where a share-partition starts on first use, and which transactional
# records it delivers. Strings with no broker synonym (GroupConfig.SHARE_AUTO_OFFSET_RESET_CONFIG,
# SHARE_ISOLATION_LEVEL_CONFIG).
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_AUTO_OFFSET_RESET_DEFAULT = "latest"
SHARE_ISOLATION_LEVEL = "share.isolation.level"
READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"
SHARE_ISOLATION_LEVELS = (READ_COMMITTED, READ_UNCOMMITTED)  # ConfigDef.ValidString.in's order
# KIP-932's RENEW acknowledgement (ShareFetch/ShareAcknowledge v2): refused when false.
SHARE_RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"

STRING_SETTINGS: dict[str, StringGroupSetting] = {s.name: s for s in (
    StringGroupSetting(SHARE_AUTO_OFFSET_RESET, SHARE_AUTO_OFFSET_RESET_DEFAULT,
                       "Where a share-partition of this group starts: earliest, latest or by_duration:<ISO-8601>."),
    StringGroupSetting(SHARE_ISOLATION_LEVEL, READ_UNCOMMITTED,
                       "read_committed: deliver only committed transactional records; read_uncommitted: all."),
    StringGroupSetting(SHARE_RENEW_ACKNOWLEDGE_ENABLE, "true",
                       "Whether members of this share group may renew their acquisition locks.", "boolean"),
)}


def _check_share_reset(raw: str) -> None:
    try:
        parse_share_reset(raw)
    except ValueError:
        # ShareGroupAutoOffsetResetStrategy.Validator's message inside ConfigException's
        raise GroupConfigError(
            f"Invalid value {raw} for configuration {SHARE_AUTO_OFFSET_RESET}: Invalid value `{raw}` for "
            f"configuration {SHARE_AUTO_OFFSET_RESET}. The value must be either 'earliest', 'latest' or of the "
            "format 'by_duration:<PnDTnHnMn.nS>'.") from None


def _check_isolation_level(raw: str) -> None:
    if raw.strip() not in SHARE_ISOLATION_LEVELS:  # ValidString: exact, case-sensitive
        raise GroupConfigError(f"Invalid value {raw} for configuration {SHARE_ISOLATION_LEVEL}: "
                               f"String must be one of: {', '.join(SHARE_ISOLATION_LEVELS)}")


def parse_bool(name: str, raw: str) -> bool:
    """ConfigDef's BOOLEAN: true or false, any case, trimmed."""
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: "
                               "Expected value to be either true or false")
    return text == "true"


def _check_renew(raw: str) -> None:
    parse_bool(SHARE_RENEW_ACKNOWLEDGE_ENABLE, raw)


_STRING_CHECKS = {SHARE_AUTO_OFFSET_RESET: _check_share_reset, SHARE_ISOLATION_LEVEL: _check_isolation_level,
                  SHARE_RENEW_ACKNOWLEDGE_ENABLE: _check_renew}


# ---- share.auto.offset.reset (the client's AutoOffsetResetStrategy.fromString rules)

@dataclass(frozen=True, slots=True)
class ShareReset:
    """A parsed share.auto.offset.reset: `duration_ms` is set for by_duration."""

    kind: str  # earliest | latest | by_duration
    duration_ms: int | None = None


_ISO_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)


def parse_iso_duration_ms(text: str) -> int:
    """java.time.Duration.parse's PnDTnHnMn.nS form, in whole milliseconds; ValueError if malformed."""
    match = _ISO_DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise ValueError(f"Text cannot be parsed to a Duration: {text}")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    seconds_total = (int(days or 0) * 86_400 + int(hours or 0) * 3_600 + int(minutes or 0) * 60
                     + int(seconds or 0))
    nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
    if seconds and seconds.startswith("-"):
        nanos = -nanos
    total_ms = seconds_total * 1000 + nanos // 1_000_000
    return -total_ms if sign == "-" else total_ms


def parse_share_reset(raw: str) -> ShareReset:
    """earliest, latest or by_duration:<non-negative ISO-8601 duration>; ValueError else. The words are
    lower case only (Kafka 4.4 refuses LATEST); the duration's letters may be either case."""
    text = raw.strip()
    if text in ("earliest", "latest"):
        return ShareReset(text)
    kind, sep, duration = text.partition(":")
    if kind != "by_duration" or not sep or not duration.strip():
        raise ValueError(f"Unrecognised auto offset reset strategy: {raw}")
    duration_ms = parse_iso_duration_ms(duration.strip().upper())
    if duration_ms < 0:
        raise ValueError("Negative duration is not supported in by_duration offset reset strategy.")
    return ShareReset("by_duration", duration_ms)


# Range checks in Kafka's order (GroupConfig.validateValues), then session > heartbeat per group type.
_RANGE_CHECK_ORDER = (HEARTBEAT_INTERVAL, SESSION_TIMEOUT, ASSIGNMENT_INTERVAL, SHARE_HEARTBEAT_INTERVAL,
                      SHARE_SESSION_TIMEOUT, SHARE_RECORD_LOCK_DURATION, SHARE_DELIVERY_COUNT_LIMIT,
                      SHARE_PARTITION_MAX_RECORD_LOCKS)
_SESSION_OVER_HEARTBEAT = ((SESSION_TIMEOUT, HEARTBEAT_INTERVAL), (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL))


class GroupConfigError(ValueError):
    """A group's settings Kafka would refuse with INVALID_CONFIG; the message is Kafka's."""


def _parse_int(name: str, raw: str, floor: int) -> int:
    text = raw.strip()  # ConfigDef trims before parsing
    try:
        value = int(text, 10)
    except ValueError:
        value = None
    if value is None or not _INT32_MIN <= value <= _INT32_MAX or not text.lstrip("+-").isdigit():
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT")
    if value < floor:
        raise GroupConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {floor}")
    return value


def validate_group_configs(configs: Mapping[str, str], broker: Config) -> dict[str, int]:
    """The parsed values of a group's complete set of settings (the integer ones); raises GroupConfigError."""
    for name in configs:
        if name not in GROUP_SETTINGS and name not in STRING_SETTINGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    for name, raw in configs.items():
        if name in _STRING_CHECKS:
            _STRING_CHECKS[name](raw)
    parsed = {name: _parse_int(name, raw, GROUP_SETTINGS[name].floor) for name, raw in configs.items()
              if name in GROUP_SETTINGS}
    for name in _RANGE_CHECK_ORDER:
        if name in parsed:
            low, high = (broker[b] for b in GROUP_SETTINGS[name].bounds)
            if not low <= parsed[name] <= high:
                raise GroupConfigError(f"{name} must be in the range {low} to {high} inclusive.")
    for session_name, heartbeat_name in _SESSION_OVER_HEARTBEAT:
        if session_name in parsed or heartbeat_name in parsed:
            session = parsed.get(session_name, broker[GROUP_SETTINGS[session_name].broker_synonym])
            heartbeat = parsed.get(heartbeat_name, broker[GROUP_SETTINGS[heartbeat_name].broker_synonym])
            if session <= heartbeat:
                raise GroupConfigError(f"{session_name} must be greater than {heartbeat_name}")
    return parsed


def effective_overrides(group_id: str, configs: Mapping[str, str], broker: Config) -> GroupConfigOverrides:
    """What the core uses for a stored set: each value clamped to the broker's current bounds (they
    may have narrowed since it was stored; Kafka caps it too and warns). Unparseable values, which
    validation keeps out, fall back to the broker's value."""
    values: dict[str, int | None] = {}
    for name, setting in GROUP_SETTINGS.items():
        raw = configs.get(name)
        if raw is None:
            values[name] = None
            continue
        try:
            value = _parse_int(name, raw, setting.floor)
        except GroupConfigError:
            log.warning("group_config_ignored", group_id=group_id, name=name, value=raw)
            values[name] = None
            continue
        low, high = (broker[b] for b in setting.bounds)
        clamped = min(max(value, low), high)
        if clamped != value:
            log.warning("group_config_clamped", group_id=group_id, name=name, value=value, effective=clamped,
                        minimum=low, maximum=high)
        values[name] = clamped
    strings: dict[str, str | None] = {}
    for name in STRING_SETTINGS:
        raw = configs.get(name)
        try:
            if raw is not None:
                _STRING_CHECKS[name](raw)
        except GroupConfigError:
            log.warning("group_config_ignored", group_id=group_id, name=name, value=raw)
            raw = None
        strings[name] = raw.strip() if raw is not None else None
    renew = strings[SHARE_RENEW_ACKNOWLEDGE_ENABLE]
    return GroupConfigOverrides(session_timeout_ms=values[SESSION_TIMEOUT],
                                heartbeat_interval_ms=values[HEARTBEAT_INTERVAL],
                                assignment_interval_ms=values[ASSIGNMENT_INTERVAL],
                                share_session_timeout_ms=values[SHARE_SESSION_TIMEOUT],
                                share_heartbeat_interval_ms=values[SHARE_HEARTBEAT_INTERVAL],
                                share_record_lock_duration_ms=values[SHARE_RECORD_LOCK_DURATION],
                                share_delivery_count_limit=values[SHARE_DELIVERY_COUNT_LIMIT],
                                share_partition_max_record_locks=values[SHARE_PARTITION_MAX_RECORD_LOCKS],
                                share_auto_offset_reset=strings[SHARE_AUTO_OFFSET_RESET],
                                share_isolation_level=strings[SHARE_ISOLATION_LEVEL],
                                share_renew_acknowledge_enable=None if renew is None
                                else parse_bool(SHARE_RENEW_ACKNOWLEDGE_ENABLE, renew))
