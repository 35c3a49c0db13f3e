"""Registration for APIs that address one group: route the request to that group's shard.

With an authorizer, the group must permit the API's operation (GROUP_AUTHORIZATION_FAILED for the
whole request otherwise), and for requests naming topics each topic must permit READ: a denied
topic is answered TOPIC_AUTHORIZATION_FAILED on each of its partitions while the others go on.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

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

DeniedTopics = Callable[[list[Any]], list[Any]]  # request topics -> response topics carrying the error


def route_to_group(api_key: int, call: ShardCall, versions: tuple[int, int],
                   error_response: ErrorResponse | None = None, group_operation: Operation = Operation.READ,
                   denied_topics: DeniedTopics | None = None) -> None:
    """``call``: the shard's method for this API (GroupShard.join_group, ...). ``denied_topics``: for
    requests listing topics (commits, deletes), how to answer the ones the principal may not READ."""

    def handle(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
        if broker.authorizer is None:  # the Heartbeat path: nothing more to look at
            return broker.groups.handle(request.group_id, call, request, ctx)
        if not permits_group(broker, ctx, group_operation, request.group_id):
            raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        denied: list[Any] = []
        if denied_topics is not None:
            denied = [t for t in request.topics if not permits_topic(broker, ctx, Operation.READ, t.name)]
            if denied:
                request = copy.copy(request)
                request.topics = [t for t in request.topics if t not in denied]
        answer = broker.groups.handle(request.group_id, call, request, ctx)
        if not denied:
            return answer
        assert denied_topics is not None
        return amend_answer(answer, lambda response: response.topics.extend(denied_topics(denied)))

    api(api_key, versions, error_response)(handle)


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
