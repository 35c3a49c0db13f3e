"""Registration for APIs that address one group: route the request to that group's shard."""

from __future__ import annotations

import copy
import inspect
from typing import Any

from coordinator.server.broker import Broker
from coordinator.server.registry import HANDLERS, ErrorResponse, HandlerError, RequestContext, api
from protocol.apis import API_SPECS


def route_to_group(api_key: int, versions: tuple[int, int], error_response: ErrorResponse | None = None) -> None:
    def handle(broker: Broker, request: Any, ctx: RequestContext) -> Any:
        return broker.groups.handle(request.group_id, request, ctx.api_version, ctx.client_id, ctx.client_host)

    api(api_key, versions, error_response)(handle)


def fan_out(broker: Broker, request: Any, ctx: RequestContext, group_ids: list[str], list_field: str,
            result_field: str) -> Any:
    """A request naming many groups: one part per shard (`list_field` narrowed to its groups), the
    responses' `result_field` lists joined back in the order the shards answered."""

    def part(ids: list[str]) -> Any:
        narrowed = copy.copy(request)
        setattr(narrowed, list_field, [g for g in getattr(request, list_field) if _group_of(g) in ids])
        return narrowed

    if not group_ids:  # nothing to ask any shard: an empty answer (found by the fuzzer: it used to crash)
        empty = API_SPECS[ctx.api_key].response_class()
        setattr(empty, result_field, [])
        return empty
    answers = broker.groups.handle_each(group_ids, part, ctx.api_version, ctx.client_id, ctx.client_host)
    pending = [answer for _, answer in answers if inspect.isawaitable(answer)]
    if not pending:
        return _merge([answer for _, answer in answers], result_field)

    async def settle(ids: list[str], answer: Any) -> Any:
        """One shard's answer; if its write failed, its groups get the error and the rest their answers."""
        if not inspect.isawaitable(answer):
            return answer
        try:
            return await answer
        except HandlerError as exc:
            return HANDLERS[ctx.api_key].error_response(part(ids), exc.code, ctx.api_version)

    async def gather() -> Any:
        return _merge([await settle(ids, answer) for ids, answer in answers], result_field)

    return gather()


def _group_of(entry: Any) -> str:
    return entry if isinstance(entry, str) else entry.group_id


def _merge(responses: list[Any], result_field: str) -> Any:
    merged = responses[0]
    for other in responses[1:]:
        getattr(merged, result_field).extend(getattr(other, result_field))
    return merged
