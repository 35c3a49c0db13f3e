"""DescribeConfigs (key 32), v0–4.

BROKER resources ("" or this node's id) list the server's settings; TOPIC
resources the topic-level settings with their effective values. v1 synonyms
and config source; v3 config type and documentation; v4 flexible.
"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeConfigsResponse
from coordinator.config import SETTINGS
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topic_configs import TOPIC_SETTINGS, topic_default

TOPIC, BROKER = 2, 4
# config sources
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# config types
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _broker_entries(broker: Broker, include_synonyms: bool, include_docs: bool) -> list:  # type: ignore[type-arg]
    entries = []
    for setting in SETTINGS:
        source = DEFAULT_CONFIG if broker.config.source(setting.name) == "default" else STATIC_BROKER_CONFIG
        value = broker.config.raw(setting.name)
        kind = STRING
        doc = setting.parse.__doc__ or ""
        if doc.startswith("integer"):
            kind = LONG
        elif doc == "true or false":
            kind = BOOLEAN
        entries.append(Entry(name=setting.name, value=value, read_only=True, is_default=source == DEFAULT_CONFIG,
                             config_source=source, is_sensitive=False,
                             synonyms=[Synonym(setting.name, value, source)] if include_synonyms else [],
                             config_type=kind, documentation=setting.doc if include_docs else None))
    return entries


def _topic_entries(broker: Broker, configs: dict[str, str], include_synonyms: bool, include_docs: bool) -> list:  # type: ignore[type-arg]
    entries = []
    kinds = {"int": INT, "long": LONG, "string": STRING, "list": LIST}
    for setting in TOPIC_SETTINGS.values():
        overridden = setting.name in configs
        value = configs[setting.name] if overridden else topic_default(broker.config, setting)
        source = DYNAMIC_TOPIC_CONFIG if overridden else DEFAULT_CONFIG
        synonyms = []
        if include_synonyms:
            if overridden:
                synonyms.append(Synonym(setting.name, value, DYNAMIC_TOPIC_CONFIG))
            if setting.broker_default is not None:
                synonyms.append(Synonym(setting.broker_default, broker.config.raw(setting.broker_default),
                                        DEFAULT_CONFIG))
        entries.append(Entry(name=setting.name, value=value, read_only=False, is_default=not overridden,
                             config_source=source, is_sensitive=False, synonyms=synonyms,
                             config_type=kinds[setting.kind], documentation=setting.doc if include_docs else None))
    return entries


@api(ApiKey.DESCRIBE_CONFIGS, versions=(0, 4))
def describe_configs(broker: Broker, request, ctx: RequestContext) -> DescribeConfigsResponse:  # type: ignore[no-untyped-def]
    results = []
    for resource in request.resources:
        def failure(code: ErrorCode, message: str) -> Result:
            return Result(error_code=int(code), error_message=message, resource_type=resource.resource_type,
                          resource_name=resource.resource_name, configs=[])

        if resource.resource_type == BROKER:
            if resource.resource_name not in ("", str(broker.node_id)):
                results.append(failure(ErrorCode.INVALID_REQUEST, f"unknown broker {resource.resource_name!r}"))
                continue
            entries = _broker_entries(broker, request.include_synonyms, request.include_documentation)
        elif resource.resource_type == TOPIC:
            topic = broker.topics.get(resource.resource_name)
            if topic is None:
                results.append(failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       f"unknown topic {resource.resource_name!r}"))
                continue
            entries = _topic_entries(broker, topic.configs, request.include_synonyms, request.include_documentation)
        else:
            results.append(failure(ErrorCode.INVALID_REQUEST, f"unsupported resource type {resource.resource_type}"))
            continue
        if resource.configuration_keys is not None:
            wanted = set(resource.configuration_keys)
            entries = [e for e in entries if e.name in wanted]
        results.append(Result(error_code=0, error_message=None, resource_type=resource.resource_type,
                              resource_name=resource.resource_name, configs=entries))
    return DescribeConfigsResponse(results=results)
