"""DescribeConfigs (key 32), v0–4.

BROKER resources: this node's id lists the server's settings, source
STATIC_BROKER_CONFIG when set by file, environment or --override, else
DEFAULT_CONFIG; read_only unless Kafka can change the setting dynamically
(DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS). "" asks for the cluster-wide dynamic
defaults, of which there are none here: no configs (ConfigHelper.describeConfigs).
Another id is INVALID_REQUEST. As Kafka's ConfigHelper: a PASSWORD-typed setting
answers value null, is_sensitive, type PASSWORD, and its synonyms' values are null
too; a setting without a default that is unset answers null. TOPIC resources list the topic-level settings with their
effective values: the topic's own (DYNAMIC_TOPIC_CONFIG), else the broker
setting that supplies the default, else the built-in default; an illegal name
is INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION. GROUP
resources (type 32, KIP-848) list the per-group settings (coordinator.group_configs)
with their effective values: the group's own, set by IncrementalAlterConfigs
(DYNAMIC_GROUP_CONFIG), else the broker setting `group.` + name (STATIC_BROKER_CONFIG
when set, else DEFAULT_CONFIG); any group id but "" (INVALID_REQUEST "Group name
must not be empty"), existing or not; DESCRIBE_CONFIGS on the group, else
GROUP_AUTHORIZATION_FAILED. Other resource types: INVALID_REQUEST.
`configuration_keys` filters by name (null: all).

v0 is_default; v1 synonyms (in precedence order, when asked for) and config
source; v3 config type and documentation (when asked for); v4 flexible.
"""

from __future__ import annotations

from coordinator.config import SETTINGS, SETTINGS_BY_NAME, Setting
from coordinator.group_configs import GROUP_SETTINGS, STRING_SETTINGS, GroupSetting, StringGroupSetting
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster, permits_group, permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topic_configs import TOPIC_SETTINGS, TopicSetting, builtin_default
from coordinator.topics import TopicError, validate_topic_name
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeConfigsResponse

TOPIC, BROKER, GROUP = 2, 4, 32
# Kafka's ConfigSource ids
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 1, 4, 5, 8
# Kafka's ConfigType ids
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "list": 7, "password": 9}

Result = DescribeConfigsResponse.DescribeConfigsResult
Entry = DescribeConfigsResponse.DescribeConfigsResourceResult
Synonym = DescribeConfigsResponse.DescribeConfigsSynonym


def _broker_value(broker: Broker, setting: Setting, text: str) -> str | None:
    """What the wire shows for `text` as a value of `setting`: null for a secret, null for unset without default."""
    if setting.sensitive or (setting.optional and not text):
        return None
    return text


def _broker_entry(broker: Broker, setting: Setting, include_synonyms: bool, include_docs: bool) -> Entry:
    value = _broker_value(broker, setting, broker.config.raw(setting.name))
    source = DEFAULT_CONFIG if broker.config.source(setting.name) == "default" else STATIC_BROKER_CONFIG
    synonyms = []
    if include_synonyms:
        synonyms.append(Synonym(setting.name, value, source))
        if source != DEFAULT_CONFIG:
            synonyms.append(Synonym(setting.name, _broker_value(broker, setting, setting.default), DEFAULT_CONFIG))
    return Entry(name=setting.name, value=value, read_only=not setting.dynamic, is_default=source == DEFAULT_CONFIG,
                 config_source=source, is_sensitive=setting.sensitive, synonyms=synonyms,
                 config_type=CONFIG_TYPES[setting.kind], documentation=setting.doc if include_docs else None)


def _topic_entry(broker: Broker, setting: TopicSetting, overrides: dict[str, str], include_synonyms: bool,
                 include_docs: bool) -> Entry:
    # Every level that could give the value, most specific first; the first one is the effective one.
    levels: list[tuple[str, str, int]] = []
    if setting.name in overrides:
        levels.append((setting.name, overrides[setting.name], DYNAMIC_TOPIC_CONFIG))
    broker_default = setting.broker_default
    set_on_broker = broker_default is not None and broker.config.source(broker_default) != "default"
    if broker_default is not None and set_on_broker:
        levels.append((broker_default, broker.config.raw(broker_default), STATIC_BROKER_CONFIG))
    default = builtin_default(setting)
    if setting.default_synonym is not None and (set_on_broker or setting.default_synonym_shown_alone):
        # Kafka's broker synonym carrying the default, as Kafka names and values it
        levels.append((setting.default_synonym, setting.default_synonym_value or default, DEFAULT_CONFIG))
    _, value, source = levels[0] if levels else (setting.name, default, DEFAULT_CONFIG)
    return Entry(name=setting.name, value=value, read_only=False, is_default=source == DEFAULT_CONFIG,
                 config_source=source, is_sensitive=False,
                 synonyms=[Synonym(*level) for level in levels] if include_synonyms else [],
                 config_type=CONFIG_TYPES[setting.kind], documentation=setting.doc if include_docs else None)


def _group_entry(broker: Broker, setting: GroupSetting, overrides, include_synonyms: bool,  # type: ignore[no-untyped-def]
                 include_docs: bool) -> Entry:
    # Kafka's createGroupConfigEntry: the group's value, then the broker synonym's levels.
    levels: list[tuple[str, str, int]] = []
    if setting.name in overrides:
        levels.append((setting.name, overrides[setting.name], DYNAMIC_GROUP_CONFIG))
    synonym = setting.broker_synonym
    if broker.config.source(synonym) != "default":
        levels.append((synonym, broker.config.raw(synonym), STATIC_BROKER_CONFIG))
    levels.append((synonym, SETTINGS_BY_NAME[synonym].default, DEFAULT_CONFIG))
    _, value, source = levels[0]
    return Entry(name=setting.name, value=value, read_only=False, is_default=source == DEFAULT_CONFIG,
                 config_source=source, is_sensitive=False,
                 synonyms=[Synonym(*level) for level in levels] if include_synonyms else [],
                 config_type=CONFIG_TYPES["int"], documentation=setting.doc if include_docs else None)


def _group_string_entry(setting: StringGroupSetting, overrides, include_synonyms: bool,  # type: ignore[no-untyped-def]
                        include_docs: bool) -> Entry:
    # No broker synonym (share.auto.offset.reset, share.isolation.level, share.renew.acknowledge.enable):
    # createGroupConfigEntry falls back to GroupConfig's own default, under the setting's own name.
    levels: list[tuple[str, str, int]] = []
    if setting.name in overrides:  # as ConfigDef.convertToString shows the parsed value
        raw = overrides[setting.name].strip()
        levels.append((setting.name, raw.lower() if setting.config_type == "boolean" else raw, DYNAMIC_GROUP_CONFIG))
    levels.append((setting.name, setting.default, DEFAULT_CONFIG))
    _, value, source = levels[0]
    return Entry(name=setting.name, value=value, read_only=False, is_default=source == DEFAULT_CONFIG,
                 config_source=source, is_sensitive=False,
                 synonyms=[Synonym(*level) for level in levels] if include_synonyms else [],
                 config_type=CONFIG_TYPES[setting.config_type], documentation=setting.doc if include_docs else None)


def _describe(broker: Broker, resource, include_synonyms: bool, include_docs: bool) -> Result:  # type: ignore[no-untyped-def]
    def failure(code: ErrorCode, message: str) -> Result:
        return Result(error_code=int(code), error_message=message, resource_type=resource.resource_type,
                      resource_name=resource.resource_name, configs=[])

    name = resource.resource_name
    if resource.resource_type == BROKER:
        if name and not name.lstrip("-").isdigit():  # ConfigHelper.resourceNameToBrokerId
            return failure(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
        if name and int(name) != broker.node_id:
            return failure(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {broker.node_id} or empty string, but received {name}")
        # "": the dynamic cluster-wide defaults (kafka-configs.sh --entity-default); none can be set here.
        entries = [_broker_entry(broker, s, include_synonyms, include_docs) for s in SETTINGS] if name else []
    elif resource.resource_type == TOPIC:
        try:
            validate_topic_name(name)
        except TopicError as exc:
            return failure(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc))
        topic = broker.topics.get(name)
        if topic is None:
            return failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name!r} does not exist")
        entries = [_topic_entry(broker, s, topic.configs, include_synonyms, include_docs)
                   for s in TOPIC_SETTINGS.values()]
    elif resource.resource_type == GROUP:
        if not name:
            return failure(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        overrides = broker.groups.group_configs.get(name)
        entries = [_group_entry(broker, GROUP_SETTINGS[n], overrides, include_synonyms, include_docs)
                   if n in GROUP_SETTINGS else
                   _group_string_entry(STRING_SETTINGS[n], overrides, include_synonyms, include_docs)
                   for n in sorted([*GROUP_SETTINGS, *STRING_SETTINGS])]
    else:
        return failure(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}")
    if resource.configuration_keys is not None:
        wanted = set(resource.configuration_keys)
        entries = [e for e in entries if e.name in wanted]
    # ConfigHelper.describeConfigs sets no message on success: the field's default "", not null.
    return Result(error_code=0, error_message="", resource_type=resource.resource_type, resource_name=name,
                  configs=entries)


def describe_configs_error(request, code: ErrorCode, version: int) -> DescribeConfigsResponse:  # type: ignore[no-untyped-def]
    return DescribeConfigsResponse(results=[
        Result(error_code=int(code), error_message=None, resource_type=r.resource_type,
               resource_name=r.resource_name, configs=[]) for r in request.resources])


@api(ApiKey.DESCRIBE_CONFIGS, versions=(0, 4), error_response=describe_configs_error)
def describe_configs(broker: Broker, request, ctx: RequestContext) -> DescribeConfigsResponse:  # type: ignore[no-untyped-def]
    return DescribeConfigsResponse(results=[
        _describe(broker, resource, request.include_synonyms, request.include_documentation)
        if _may_describe(broker, ctx, resource) else
        Result(error_code=int(_AUTHORIZATION_FAILED.get(resource.resource_type,
                                                        ErrorCode.CLUSTER_AUTHORIZATION_FAILED)),
               error_message="Authorization failed.", resource_type=resource.resource_type,
               resource_name=resource.resource_name, configs=[])
        for resource in request.resources])


_AUTHORIZATION_FAILED = {TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED, GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED}


def _may_describe(broker: Broker, ctx: RequestContext, resource) -> bool:  # type: ignore[no-untyped-def]
    if resource.resource_type == GROUP:
        return permits_group(broker, ctx, Operation.DESCRIBE_CONFIGS, resource.resource_name)
    if resource.resource_type == TOPIC:
        return permits_topic(broker, ctx, Operation.DESCRIBE_CONFIGS, resource.resource_name)
    return permits_cluster(broker, ctx, Operation.DESCRIBE_CONFIGS)
