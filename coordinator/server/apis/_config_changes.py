"""What IncrementalAlterConfigs and AlterConfigs share: the request-shape checks Kafka makes on the
broker (ConfigAdminManager.preprocess) and the change of a TOPIC resource's settings, checked as
Kafka's controller does (ConfigurationControlManager.validateAlterConfig) and applied whole or not
at all."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import structlog

from coordinator.group_configs import GroupConfigError, validate_group_configs
from coordinator.server.broker import Broker
from coordinator.topic_configs import validate_topic_configs
from coordinator.topics import TopicError, validate_topic_name
from protocol.error_codes import ErrorCode

log = structlog.get_logger()

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
RESOURCE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                  CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}


class Refused(Exception):
    """One resource's answer: the error code and message (the other resources go on)."""

    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def check_entries(entries: Iterable[tuple[str, str | None, bool]]) -> None:
    """``(name, value, value_required)`` per entry: a name twice, or a null where a value is
    required, is INVALID_REQUEST with Kafka's message."""
    entries = list(entries)
    if any(n > 1 for n in Counter(name for name, _, _ in entries).values()):
        raise Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [name for name, value, required in entries if required and value is None]
    if nulls:
        raise Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))


def check_resource_type(resource_type: int, alterable: set[int]) -> None:
    if resource_type in alterable:
        return
    if resource_type in RESOURCE_NAMES:
        raise Refused(ErrorCode.INVALID_REQUEST,
                      f"Altering {RESOURCE_NAMES[resource_type]} configs is not supported by this server.")
    raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource_type}")


def alter_group(broker: Broker, group_id: str, updated: dict[str, str], validate_only: bool) -> None:
    """Make ``updated`` the group's whole set of settings: an empty group id is INVALID_REQUEST, the
    set is validated (INVALID_CONFIG), then written durably (unless ``validate_only``). Raises
    ``Refused``; OSError from the store means nothing changed."""
    if not group_id:
        raise Refused(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    try:
        validate_group_configs(updated, broker.config)
    except GroupConfigError as exc:
        raise Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if validate_only:
        return
    broker.groups.group_configs.replace(group_id, updated)
    log.info("group_configs_altered", group_id=group_id, configs=updated)


def current_topic_configs(broker: Broker, name: str) -> dict[str, str]:
    topic = broker.topics.get(name)
    return dict(topic.configs) if topic is not None else {}


def alter_topic(broker: Broker, name: str, updated: dict[str, str], validate_only: bool) -> None:
    """Make ``updated`` the topic's whole set of overrides: validated (INVALID_CONFIG), the topic
    must exist (UNKNOWN_TOPIC_OR_PARTITION), then written durably and applied to its partitions at
    once (unless ``validate_only``). Raises ``Refused``; on any failure nothing changed."""
    if not name:
        raise Refused(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    try:
        validate_topic_name(name)
    except TopicError as exc:
        raise Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
    problem = validate_topic_configs(updated)
    if problem:
        raise Refused(ErrorCode.INVALID_CONFIG, problem)
    topic = broker.topics.get(name)
    if topic is None:
        raise Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    if validate_only or updated == topic.configs:
        return
    try:
        broker.topics.set_configs(name, updated)
    except OSError as exc:
        log.error("topic_configs_write_failed", topic=name, error=repr(exc))
        raise Refused(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None
    broker.data.apply_topic_config(topic)
    log.info("topic_configs_altered", topic=name, configs=updated)
