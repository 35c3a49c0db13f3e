"""IncrementalAlterConfigs (key 44), v0–1: per-group settings (GROUP resources, type 32).

v1 flexible; nothing else differs. Only GROUP resources can be altered here (topic and broker
settings are static in this server): other known types are INVALID_REQUEST "Altering <TYPE>
configs is not supported by this server.", unknown ones INVALID_REQUEST "Unknown resource type N",
as in Kafka. Each resource is answered on its own, in Kafka's order of checks:

1. a resource named twice in the request: INVALID_REQUEST "Each resource must appear at most once.";
   a setting named twice: INVALID_REQUEST "Error due to duplicate config keys"; a null value in a
   SET (or APPEND/SUBTRACT): INVALID_REQUEST "Null value not supported for : <names>";
2. ALTER_CONFIGS on the GROUP resource, else GROUP_AUTHORIZATION_FAILED;
3. the operations, over the group's current settings: SET, DELETE (back to the broker's value;
   deleting what is not set is fine); APPEND and SUBTRACT are for list settings only, and every
   group setting is an int: INVALID_CONFIG "Can't APPEND to key X because its type is not LIST.";
   an unknown operation id: INVALID_REQUEST;
4. an empty group id: INVALID_REQUEST "Default group resources are not allowed.";
5. the group's whole resulting set is validated (coordinator.group_configs): INVALID_CONFIG.

A valid change is written durably (fsync) before the answer, unless `validate_only`. It applies
to the group's members from their next heartbeat (session timer, heartbeat interval) and to its
next assignor decision (assignment interval). A group need not exist to be configured.
"""

from __future__ import annotations

from collections import Counter

import structlog

from coordinator.group_configs import GroupConfigError, validate_group_configs
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import IncrementalAlterConfigsResponse

log = structlog.get_logger()

GROUP = 32
# Kafka's ConfigResource types that this server knows but does not alter.
OTHER_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

Answer = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _check_shape(resource) -> None:  # type: ignore[no-untyped-def]
    names = Counter(c.name for c in resource.configs)
    if any(n > 1 for n in names.values()):
        raise _Refused(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    if resource.resource_type == GROUP:
        return
    if resource.resource_type in OTHER_TYPES:
        raise _Refused(ErrorCode.INVALID_REQUEST,
                       f"Altering {OTHER_TYPES[resource.resource_type]} configs is not supported by this server.")
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")


def _altered(current: dict[str, str], resource) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The group's settings once the resource's operations are applied (nothing stored yet)."""
    result = dict(current)
    for config in resource.configs:
        op = config.config_operation
        if op == SET:
            result[config.name] = config.value
        elif op == DELETE:
            result.pop(config.name, None)
        elif op in OP_NAMES:
            raise _Refused(ErrorCode.INVALID_CONFIG,
                           f"Can't {OP_NAMES[op]} to key {config.name} because its type is not LIST.")
        else:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    return result


def _alter_group(broker: Broker, resource, validate_only: bool) -> None:  # type: ignore[no-untyped-def]
    store = broker.groups.group_configs
    group_id = resource.resource_name
    updated = _altered(dict(store.get(group_id)), resource)
    if not group_id:
        raise _Refused(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    try:
        validate_group_configs(updated, broker.config)
    except GroupConfigError as exc:
        raise _Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if validate_only:
        return
    store.replace(group_id, updated)
    log.info("group_configs_altered", group_id=group_id, configs=updated)


def _answer(broker: Broker, ctx: RequestContext, resource, duplicated: bool,  # type: ignore[no-untyped-def]
            validate_only: bool) -> Answer:
    try:
        if duplicated:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        _check_shape(resource)
        if not permits_group(broker, ctx, Operation.ALTER_CONFIGS, resource.resource_name):
            raise _Refused(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
        _alter_group(broker, resource, validate_only)
    except _Refused as refused:
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
