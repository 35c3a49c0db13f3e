"""Registration for APIs that address one group: route the request to that group's shard.

With an authorizer, the group must permit the API's operation (GROUP_AUTHORIZATION_FAILED for the
whole request otherwise). Requests naming topics (OffsetCommit, OffsetDelete) are screened first,
as KafkaApis.handleOffsetCommitRequest and handleOffsetDeleteRequest do before the group is
consulted: a topic the principal may not READ is answered TOPIC_AUTHORIZATION_FAILED on each of its
partitions, a topic or partition the metadata does not have UNKNOWN_TOPIC_OR_PARTITION; the other
partitions go on to the group, and its answer is merged after those errors. A cluster node re-reads
the cluster's topics before it answers UNKNOWN_TOPIC_OR_PARTITION (learn_shared_topics).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.broker import Broker
from coordinator.server.groups import ShardCall
from coordinator.server.registry import (
    HANDLERS,
    ErrorResponse,
    HandlerError,
    Pending,
    Reply,
    RequestContext,
    api,
)
from protocol.apis import API_SPECS
from protocol.error_codes import ErrorCode

log = structlog.get_logger()


@dataclass(frozen=True, slots=True)
class TopicScreen:
    """How an API naming topics answers the partitions screened out before its group is consulted."""

    error_topic: Callable[[str, list[int], int], Any]  # (name, partition indexes, code) -> response topic
    # OffsetCommit answers at once when nothing is left for the group (KafkaApis returns before
    # commitOffsetsToCoordinator); OffsetDelete still asks the group (GROUP_ID_NOT_FOUND, ...).
    consult_group_when_empty: bool
    # OffsetDelete: a top-level error from the group replaces the partition errors (its Builder.merge).
    top_level_error_wins: bool = False


def route_to_group(api_key: int, call: ShardCall, versions: tuple[int, int],
                   error_response: ErrorResponse | None = None, group_operation: Operation = Operation.READ,
                   topic_screen: TopicScreen | None = None) -> None:
    """``call``: the shard's method for this API (GroupShard.join_group, ...). ``topic_screen``: for
    requests listing topics (commits, deletes), how to answer the partitions screened out."""

    def handle(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
        if broker.authorizer is not None and not permits_group(broker, ctx, group_operation, request.group_id):
            raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if topic_screen is None:  # the Heartbeat path: nothing more to look at
            return broker.groups.handle(request.group_id, call, request, ctx)
        return screened(broker, request, ctx, learn=broker.cluster is not None)

    def screened(broker: Broker, request: Any, ctx: RequestContext, learn: bool) -> Reply:
        assert topic_screen is not None
        errors, kept = screen_topics(broker, ctx, request.topics)
        if not errors:
            return broker.groups.handle(request.group_id, call, request, ctx)
        if learn and any(code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for _, _, code in errors):
            # The topic may have been made a moment ago on another node: screened again once learnt.
            return Pending(_after_learning_topics(broker, lambda: screened(broker, request, ctx, learn=False)))
        error_topics = [topic_screen.error_topic(name, partitions, code) for name, partitions, code in errors]
        if not kept and not topic_screen.consult_group_when_empty:
            response: Any = API_SPECS[api_key].response_class()
            response.topics = error_topics
            return response
        request = copy.copy(request)
        request.topics = kept
        answer = broker.groups.handle(request.group_id, call, request, ctx)

        def merge(response: Any) -> None:
            if topic_screen.top_level_error_wins and response.error_code:
                return
            response.topics = merge_topics(error_topics, response.topics)

        return amend_answer(answer, merge)

    api(api_key, versions, error_response)(handle)


async def learn_shared_topics(broker: Broker) -> None:
    """A cluster node's exchange of topics with the database, now (Cluster.sync_topics); nothing for a
    single node. The database unreachable: the node answers from what it knows."""
    if broker.cluster is None:
        return
    try:
        await broker.cluster.sync_topics()
    except Exception as exc:
        log.warning("cluster_topic_sync_failed", error=repr(exc))


async def _after_learning_topics(broker: Broker, then: Callable[[], Reply]) -> Any:
    await learn_shared_topics(broker)
    reply = then()
    return await reply.answer if isinstance(reply, Pending) else reply


def screen_topics(broker: Broker, ctx: RequestContext,
                  topics: list[Any]) -> tuple[list[tuple[str, list[int], int]], list[Any]]:
    """The request's (name, partition indexes, error code) screened out, in request order, and its
    topics narrowed to the partitions left (topics left with none are dropped)."""
    errors: list[tuple[str, list[int], int]] = []
    kept: list[Any] = []
    authorizer, registry = broker.authorizer, broker.topics
    for t in topics:
        if authorizer is not None and not permits_topic(broker, ctx, Operation.READ, t.name):
            errors.append((t.name, [p.partition_index for p in t.partitions], ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        known = registry.get(t.name)
        if known is None:
            errors.append((t.name, [p.partition_index for p in t.partitions], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        count = known.partitions
        for p in t.partitions:  # a plain loop: this is every commit's path (tests/bench/commit_path.py)
            if not 0 <= p.partition_index < count:
                break
        else:
            kept.append(t)
            continue
        missing = [p.partition_index for p in t.partitions if not 0 <= p.partition_index < count]
        errors.append((t.name, missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        narrowed = copy.copy(t)
        narrowed.partitions = [p for p in t.partitions if 0 <= p.partition_index < count]
        if narrowed.partitions:
            kept.append(narrowed)
    return errors, kept


def merge_topics(first: list[Any], then: list[Any]) -> list[Any]:
    """Response topics: ``first``, then ``then``'s partitions added to the topic of the same name or
    its topics appended (the order of Kafka's OffsetCommitResponse.Builder.merge)."""
    merged = list(first)
    by_name = {t.name: t for t in merged}
    for topic in then:
        existing = by_name.get(topic.name)
        if existing is None:
            merged.append(topic)
            by_name[topic.name] = topic
        else:
            existing.partitions.extend(topic.partitions)
    return merged


def amend_answer(answer: Any, amend: Callable[[Any], None]) -> Any:
    """``answer`` (a response, or a Pending one) with ``amend`` applied to the response."""
    if isinstance(answer, Pending):
        return answer.amended(amend)
    amend(answer)
    return answer


def fan_out(broker: Broker, request: Any, ctx: RequestContext, group_ids: list[str], list_field: str,
            result_field: str, operation: Operation, call: ShardCall) -> Any:
    """A request naming many groups: one part per shard (`list_field` narrowed to its groups), the
    responses' `result_field` lists joined back in the order the shards answered. Groups that do not
    permit ``operation`` are answered GROUP_AUTHORIZATION_FAILED without asking their shard."""

    def part(ids: list[str] | set[str]) -> Any:
        narrowed = copy.copy(request)
        setattr(narrowed, list_field, [g for g in getattr(request, list_field) if _group_of(g) in ids])
        return narrowed

    denied = {g for g in group_ids if not permits_group(broker, ctx, operation, g)}
    if denied:
        refusal = HANDLERS[ctx.api_key].error_response(part(denied), ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                                       ctx.api_version)
        answer = fan_out(broker, part(set(group_ids) - denied), ctx, [g for g in group_ids if g not in denied],
                         list_field, result_field, operation, call)
        return amend_answer(answer, lambda response: getattr(response, result_field).extend(
            getattr(refusal, result_field)))
    if not group_ids:  # nothing to ask any shard: an empty answer (found by the fuzzer: it used to crash)
        empty = API_SPECS[ctx.api_key].response_class()
        setattr(empty, result_field, [])
        return empty
    answers = broker.groups.handle_each(group_ids, part, call, ctx)
    if not any(isinstance(answer, Pending) for _, answer in answers):
        return _merge([answer for _, answer in answers], result_field)

    async def settle(ids: list[str], answer: Any) -> Any:
        """One shard's answer; if its write failed, its groups get the error and the rest their answers."""
        if not isinstance(answer, Pending):
            return answer
        try:
            return await answer.answer
        except HandlerError as exc:
            return HANDLERS[ctx.api_key].error_response(part(ids), exc.code, ctx.api_version)

    async def gather() -> Any:
        return _merge([await settle(ids, answer) for ids, answer in answers], result_field)

    return Pending(gather())


def _group_of(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry.group_id


def _merge(responses: list[Any], result_field: str) -> Any:
    merged = responses[0]
    for other in responses[1:]:
        getattr(merged, result_field).extend(getattr(other, result_field))
    return merged
