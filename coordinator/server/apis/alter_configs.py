"""AlterConfigs (key 33), v0–2: the legacy, whole-set form, for TOPIC (type 2) and GROUP (type 32)
resources.

v1 as v0 (throttling before answering); v2 flexible. The configs given become the resource's
whole set of overrides: every setting not named goes back to its default (Kafka's
legacyAlterConfigs deletes them implicitly). Each resource is answered on its own, in Kafka's
order of checks: a resource named twice (INVALID_REQUEST "Each resource must appear at most
once."), a setting named twice or a null value (INVALID_REQUEST), a resource type other than
TOPIC or GROUP (INVALID_REQUEST: the broker's settings are static here), ALTER_CONFIGS on the
resource (TOPIC_/GROUP_AUTHORIZATION_FAILED); then for a topic the values (INVALID_CONFIG) and its
existence (UNKNOWN_TOPIC_OR_PARTITION), for a group a non-empty id (INVALID_REQUEST) and the
values (INVALID_CONFIG). `validate_only` checks and changes nothing; a valid change is fsynced
before the answer and applies at once, as with IncrementalAlterConfigs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

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
)
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AlterConfigsResponse

Answer = AlterConfigsResponse.AlterConfigsResourceResponse


def _answer(broker: Broker, ctx: RequestContext, resource: Any, duplicated: bool, validate_only: bool) -> Answer:
    try:
        if duplicated:
            raise Refused(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
        check_entries((c.name, c.value, True) for c in resource.configs)
        check_resource_type(resource.resource_type, {TOPIC, GROUP})
        configs = {c.name: c.value for c in resource.configs}
        if resource.resource_type == TOPIC:
            if not permits_topic(broker, ctx, Operation.ALTER_CONFIGS, resource.resource_name):
                raise Refused(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
            alter_topic(broker, resource.resource_name, configs, validate_only)
        else:
            if not permits_group(broker, ctx, Operation.ALTER_CONFIGS, resource.resource_name):
                raise Refused(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
            alter_group(broker, resource.resource_name, configs, validate_only)
    except Refused as refused:
        return Answer(error_code=int(refused.code), error_message=refused.message,
                      resource_type=resource.resource_type, resource_name=resource.resource_name)
    except OSError as exc:  # the group store could not be written: nothing changed
        return Answer(error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), error_message=str(exc),
                      resource_type=resource.resource_type, resource_name=resource.resource_name)
    return Answer(error_code=0, error_message=None, resource_type=resource.resource_type,
                  resource_name=resource.resource_name)


def alter_configs_error(request: Any, code: ErrorCode, version: int) -> AlterConfigsResponse:
    return AlterConfigsResponse(throttle_time_ms=0, responses=[
        Answer(error_code=int(code), error_message=None, resource_type=r.resource_type, resource_name=r.resource_name)
        for r in request.resources])


@api(ApiKey.ALTER_CONFIGS, versions=(0, 2), error_response=alter_configs_error)
def alter_configs(broker: Broker, request: Any, ctx: RequestContext) -> AlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    return AlterConfigsResponse(throttle_time_ms=0, responses=[
        _answer(broker, ctx, r, seen[(r.resource_type, r.resource_name)] > 1, request.validate_only)
        for r in request.resources])
