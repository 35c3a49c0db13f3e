"""IncrementalAlterConfigs (key 44), v0–1: per-topic settings (TOPIC resources, type 2) and
per-group settings (GROUP resources, type 32).

v1 flexible; nothing else differs. BROKER and other known types are INVALID_REQUEST "Altering
<TYPE> configs is not supported by this server." (the broker's settings are static here), unknown
ones INVALID_REQUEST "Unknown resource type N", as in Kafka. Each resource is answered on its own,
in Kafka's order of checks:

1. a resource named twice in the request: INVALID_REQUEST "Each resource must appear at most once.";
   a setting named twice: INVALID_REQUEST "Error due to duplicate config keys"; a null value in a
   SET (or APPEND/SUBTRACT): INVALID_REQUEST "Null value not supported for : <names>";
2. ALTER_CONFIGS on the resource, else TOPIC_/GROUP_AUTHORIZATION_FAILED;
3. the operations, over the resource's current settings: SET, DELETE (back to the default;
   deleting what is not set is fine); APPEND and SUBTRACT are for list settings only (a topic's
   cleanup.policy; they start from the effective value): else INVALID_CONFIG "Can't APPEND to key
   X because its type is not LIST."; an unknown operation id: INVALID_REQUEST;
4. topics (Kafka's controller): the whole resulting set is validated (INVALID_CONFIG, Kafka's
   messages), then the topic must exist (UNKNOWN_TOPIC_OR_PARTITION); groups: an empty group id
   is INVALID_REQUEST "Default group resources are not allowed.", then the whole resulting set is
   validated (coordinator.group_configs): INVALID_CONFIG.

A valid change is written durably (fsync) before the answer, unless `validate_only`, and is whole
or not at all. A topic's change applies to its partitions at once (segment rolling, retention and
compaction in the next maintenance round). A group's applies to its members from their next
heartbeat (session timer, heartbeat interval) and to its next assignor decision (assignment
interval); a group need not exist to be configured.
"""

from __future__ import annotations

from collections import Counter

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.apis._config_changes import (
    GROUP,
    TOPIC,
    Refused,
    alter_group,
    alter_topic,
    check_entries,
    check_resource_type,
    current_topic_configs,
)
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topic_configs import TOPIC_SETTINGS, topic_default
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import IncrementalAlterConfigsResponse

log = structlog.get_logger()

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

Answer = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


def _check_shape(resource) -> None:  # type: ignore[no-untyped-def]
    check_entries((c.name, c.value, c.config_operation != DELETE) for c in resource.configs)
    check_resource_type(resource.resource_type, {TOPIC, GROUP})


def _altered(current: dict[str, str], resource, lists: dict[str, str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The resource's settings once its operations are applied (nothing stored yet). ``lists``: the
    effective value of each list-typed setting, which APPEND and SUBTRACT start from."""
    result = dict(current)
    for config in resource.configs:
        op = config.config_operation
        if op == SET:
            result[config.name] = config.value
        elif op == DELETE:
            result.pop(config.name, None)
        elif op in OP_NAMES:
            if config.name not in lists:
                raise Refused(ErrorCode.INVALID_CONFIG,
                              f"Can't {OP_NAMES[op]} to key {config.name} because its type is not LIST.")
            items = [v for v in result.get(config.name, lists[config.name]).split(",") if v]
            for value in config.value.split(","):  # Kafka's incrementalAlterConfigResource
                if op == APPEND and value not in items:
                    items.append(value)
                elif op == SUBTRACT and value in items:
                    items.remove(value)
            result[config.name] = ",".join(items)
        else:
            raise Refused(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return result


def _alter_topic(broker: Broker, resource, validate_only: bool) -> None:  # type: ignore[no-untyped-def]
    name = resource.resource_name
    current = current_topic_configs(broker, name)
    lists = {s.name: current.get(s.name, topic_default(broker.config, s))
             for s in TOPIC_SETTINGS.values() if s.kind == "list"}
    alter_topic(broker, name, _altered(current, resource, lists), validate_only)


def _alter_group(broker: Broker, resource, validate_only: bool) -> None:  # type: ignore[no-untyped-def]
    current = dict(broker.groups.group_configs.get(resource.resource_name))
    alter_group(broker, resource.resource_name, _altered(current, resource, {}), validate_only)


def _answer(broker: Broker, ctx: RequestContext, resource, duplicated: bool,  # type: ignore[no-untyped-def]
            validate_only: bool) -> Answer:
    try:
        if duplicated:
            raise Refused(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        _check_shape(resource)
        if resource.resource_type == TOPIC:
            if not permits_topic(broker, ctx, Operation.ALTER_CONFIGS, resource.resource_name):
                raise Refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            _alter_topic(broker, resource, validate_only)
        else:
            if not permits_group(broker, ctx, Operation.ALTER_CONFIGS, resource.resource_name):
                raise Refused(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
            _alter_group(broker, resource, validate_only)
    except Refused as refused:
        return Answer(error_code=int(refused.code), error_message=refused.message,
                      resource_type=resource.resource_type, resource_name=resource.resource_name)
    except OSError as exc:  # the store could not be written: nothing changed
        log.error("group_configs_write_failed", group_id=resource.resource_name, error=repr(exc))
        return Answer(error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), error_message=str(exc),
                      resource_type=resource.resource_type, resource_name=resource.resource_name)
    return Answer(error_code=0, error_message=None, resource_type=resource.resource_type,
                  resource_name=resource.resource_name)


def incremental_alter_configs_error(request, code: ErrorCode, version: int) -> IncrementalAlterConfigsResponse:  # type: ignore[no-untyped-def]
    return IncrementalAlterConfigsResponse(responses=[
        Answer(error_code=int(code), error_message=None, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources])


@api(ApiKey.INCREMENTAL_ALTER_CONFIGS, versions=(0, 1), error_response=incremental_alter_configs_error)
def incremental_alter_configs(broker: Broker, request, ctx: RequestContext) -> IncrementalAlterConfigsResponse:  # type: ignore[no-untyped-def]
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    return IncrementalAlterConfigsResponse(responses=[
        _answer(broker, ctx, r, seen[(r.resource_type, r.resource_name)] > 1, request.validate_only)
        for r in request.resources])
