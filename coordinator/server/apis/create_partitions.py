"""CreatePartitions (key 37), v0–3: grow topics, as Kafka's ControllerApis.createPartitions and
ReplicationControlManager.createPartitions answer on a one-node cluster.

Per topic, in Kafka's order: a name given twice (INVALID_REQUEST "Duplicate topic name.", none of its
entries applied), no ALTER on the topic (TOPIC_AUTHORIZATION_FAILED), an unknown topic
(UNKNOWN_TOPIC_OR_PARTITION), the same count ("Topic already has N partition(s).") or fewer
(INVALID_PARTITIONS), then manual assignments: one per new partition, each a non-empty list of
registered brokers without repeats and with the topic's replication factor (1 here), else
INVALID_REPLICA_ASSIGNMENT in Kafka's words; only this node is registered, so an assignment naming any
other broker is refused as Kafka refuses it. `validate_only` checks everything and changes nothing.

The new partitions reach Metadata and the data plane through the topic registry, and every group shard
hears of the growth (consumer groups subscribed to the topic bump their epoch at their next heartbeat;
a classic group's leader sees the new partitions in its metadata and rejoins).

v1 is v0; v2 flexible; v3 throttles with the controller mutation quota in Kafka (no quotas here).
`__consumer_offsets` cannot grow here (its partition count is `offsets.topic.num.partitions`).
"""

from __future__ import annotations

from typing import Any

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.topics import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreatePartitionsResponse

log = structlog.get_logger()
Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def create_partitions_error(request: Any, code: ErrorCode, version: int) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(results=[Result(name=t.name, error_code=int(code), error_message=None)
                                             for t in request.topics])


def _assignment_problem(broker: Broker, brokers: list[int], replication_factor: int) -> str | None:
    """Kafka's validateManualPartitionAssignment, for a cluster of this one node."""
    if not brokers:
        return "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(brokers):
        if broker_id != broker.node_id:
            return (f"The manual partition assignment includes broker {broker_id}, but no such broker is "
                    "registered.")
        if broker_id == previous:
            return f"The manual partition assignment includes the broker {previous} more than once."
        previous = broker_id
    if len(brokers) != replication_factor:
        return (f"The manual partition assignment includes a partition with {len(brokers)} replica(s), but this "
                f"is not consistent with previous partitions, which have {replication_factor} replica(s).")
    return None


def _problem(broker: Broker, wanted: Any) -> tuple[ErrorCode, str | None] | None:
    """Why `wanted` cannot grow as asked, or None."""
    topic = broker.topics.get(wanted.name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None  # Kafka throws it without a message
    if wanted.count == topic.partitions:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {topic.partitions} partition(s)."
    if wanted.count < topic.partitions:
        return ErrorCode.INVALID_PARTITIONS, (f"The topic {wanted.name} currently has {topic.partitions} "
                                              f"partition(s); {wanted.count} would not be an increase.")
    additional = wanted.count - topic.partitions
    if wanted.assignments is not None:
        if len(wanted.assignments) != additional:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"Attempted to add {additional} additional partition(s), but only {len(wanted.assignments)} "
                "assignment(s) were specified.")
        for assignment in wanted.assignments:
            problem = _assignment_problem(broker, list(assignment.broker_ids), replication_factor=1)
            if problem is not None:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem
    if topic.name == OFFSETS_TOPIC:
        return ErrorCode.INVALID_PARTITIONS, (f"{OFFSETS_TOPIC} keeps offsets.topic.num.partitions partitions; "
                                              "groupcoord cannot grow it.")
    return None


@api(ApiKey.CREATE_PARTITIONS, versions=(0, 3), error_response=create_partitions_error)
def create_partitions(broker: Broker, request: Any, ctx: RequestContext) -> CreatePartitionsResponse:
    names = [t.name for t in request.topics]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    results = [Result(name=name, error_code=int(ErrorCode.INVALID_REQUEST), error_message="Duplicate topic name.")
               for name in duplicated]
    allowed = []
    for wanted in request.topics:
        if wanted.name in duplicated:
            continue
        if permits_topic(broker, ctx, Operation.ALTER, wanted.name):
            allowed.append(wanted)
        else:
            results.append(Result(name=wanted.name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                  error_message=None))
    for wanted in allowed:
        problem = _problem(broker, wanted)
        if problem is not None:
            results.append(Result(name=wanted.name, error_code=int(problem[0]), error_message=problem[1]))
            continue
        if not request.validate_only:
            before = broker.topics.get(wanted.name).partitions  # type: ignore[union-attr]  # checked above
            broker.topics.add_partitions(wanted.name, wanted.count)
            log.info("topic_partitions_added", topic=wanted.name, partitions=wanted.count, previously=before,
                     client_id=ctx.client_id)
        results.append(Result(name=wanted.name, error_code=0, error_message=None))
    return CreatePartitionsResponse(results=results)
