"""Group-level settings (Kafka's GROUP config resource): names, broker synonyms, validation.

The consumer-protocol settings of Kafka's `GroupConfig`: each overrides, for one group, the broker
setting named `group.` + its name. Kafka's rules (apache/kafka `GroupConfig`,
`ControllerConfigurationValidator`, `ConfigurationControlManager`), all answered INVALID_CONFIG:

* an unknown name: "Unknown group config name: X";
* a value that is not an int32: "Invalid value V for configuration X: Not a number of type INT";
* below the type's floor (1, or 0 for the assignment interval): "... Value must be at least N";
* outside the broker's `group.consumer.min/max.*` bounds: "X must be in the range A to B inclusive.";
* a session timeout not above the heartbeat interval (either side from the broker when not set
  for the group): "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms".

The whole resulting set of a group is checked, not only what a request changes. Kafka also has
`share.*`, `streams.*`, `consumer.assignor.offload.enable` and dead-letter-queue group settings;
of those this server knows `share.auto.offset.reset` (a string, below); it has no streams groups and
offloads per broker only, so the other names are unknown here. A stored value that a later,
narrower broker bound excludes is clamped when used (Kafka's `GroupConfig.evaluate`), see
`effective_overrides`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from coordinator.config import Config
from coordinator.core.consumer.group_configs import GroupConfigOverrides

log = structlog.get_logger()

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, slots=True)
class GroupSetting:
    name: str  # e.g. consumer.session.timeout.ms
    floor: int  # the type's own lower bound (ConfigDef atLeast)
    doc: str

    @property
    def broker_synonym(self) -> str:
        """The broker setting giving the default: Kafka's GroupCoordinatorConfig.GROUP_PREFIX + name."""
        return "group." + self.name

    @property
    def bounds(self) -> tuple[str, str]:
        """The broker settings bounding it: group.consumer.min.X / group.consumer.max.X."""
        rest = self.name.removeprefix("consumer.")
        return f"group.consumer.min.{rest}", f"group.consumer.max.{rest}"


SESSION_TIMEOUT = "consumer.session.timeout.ms"
HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"

GROUP_SETTINGS: dict[str, GroupSetting] = {s.name: s for s in (
    GroupSetting(ASSIGNMENT_INTERVAL, 0,
                 "Least time between two target assignment computations of this group (KIP-1263)."),
    GroupSetting(HEARTBEAT_INTERVAL, 1, "Heartbeat interval given to this group's consumer-protocol members."),
    GroupSetting(SESSION_TIMEOUT, 1, "Session timeout of this group's consumer-protocol members."),
)}

# Share groups (KIP-932): where a share-partition starts on first use. A string setting with no broker
# synonym (Kafka's GroupConfig.SHARE_AUTO_OFFSET_RESET_CONFIG, default latest); by_duration:<ISO-8601>
# is accepted and, until it is implemented, read as latest.
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_AUTO_OFFSET_RESET_DEFAULT = "latest"


def _check_share_reset(raw: str) -> None:
    if raw.strip().lower() in ("latest", "earliest") or raw.strip().lower().startswith("by_duration:"):
        return
    raise GroupConfigError(f"Invalid value {raw} for configuration {SHARE_AUTO_OFFSET_RESET}: "
                           "String must be one of (case insensitive): LATEST, EARLIEST, BY_DURATION")


# Range checks in Kafka's order (GroupConfig.validateValues), then session > heartbeat.
_RANGE_CHECK_ORDER = (HEARTBEAT_INTERVAL, SESSION_TIMEOUT, ASSIGNMENT_INTERVAL)


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
    """The parsed values of a group's complete set of settings; raises GroupConfigError."""
    for name in configs:
        if name not in GROUP_SETTINGS and name != SHARE_AUTO_OFFSET_RESET:
            raise GroupConfigError(f"Unknown group config name: {name}")
    if SHARE_AUTO_OFFSET_RESET in configs:
        _check_share_reset(configs[SHARE_AUTO_OFFSET_RESET])
    parsed = {name: _parse_int(name, raw, GROUP_SETTINGS[name].floor) for name, raw in configs.items()
              if name in GROUP_SETTINGS}
    for name in _RANGE_CHECK_ORDER:
        if name in parsed:
            low, high = (broker[b] for b in GROUP_SETTINGS[name].bounds)
            if not low <= parsed[name] <= high:
                raise GroupConfigError(f"{name} must be in the range {low} to {high} inclusive.")
    if SESSION_TIMEOUT in parsed or HEARTBEAT_INTERVAL in parsed:
        session = parsed.get(SESSION_TIMEOUT, broker["group.consumer.session.timeout.ms"])
        heartbeat = parsed.get(HEARTBEAT_INTERVAL, broker["group.consumer.heartbeat.interval.ms"])
        if session <= heartbeat:
            raise GroupConfigError(f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}")
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
    return GroupConfigOverrides(session_timeout_ms=values[SESSION_TIMEOUT],
                                heartbeat_interval_ms=values[HEARTBEAT_INTERVAL],
                                assignment_interval_ms=values[ASSIGNMENT_INTERVAL])
