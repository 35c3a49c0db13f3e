"""DescribeAcls (key 29), CreateAcls (30), DeleteAcls (31), v0–3: kafka-acls.sh --bootstrap-server and
every AdminClient's ACL calls, over the ACL file that `groupcoord acls` edits (<log.dirs>/acls.json).

As Kafka's AclApis: DescribeAcls needs DESCRIBE on the cluster, CreateAcls and DeleteAcls ALTER
(else CLUSTER_AUTHORIZATION_FAILED for the whole request); without an authorizer configured the
answer is SECURITY_DISABLED. What the bindings become is coordinator.security.acl_admin's (Kafka's
per-creation checks, filters and atomic deletes). A change is written and fsynced under the file's
lock (shared with `groupcoord acls`) before it is acknowledged, and the authorizer takes it at once:
the next request of any client is decided by it. The write runs off the event loop, one at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import structlog

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreateAclsResponse, DeleteAclsResponse, DescribeAclsResponse
from coordinator.security import acl_admin
from coordinator.security.acl_admin import (OPERATION_CODES, PATTERN_CODES, PERMISSION_CODES, RESOURCE_TYPE_CODES,
                                            AclFilter, Creation, RequestInvalid)
from coordinator.security.acls import AclBinding, AclError, Operation, locked, read_acls, write_acls
from coordinator.security.authorizer import Authorizer
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api

log = structlog.get_logger()

NO_AUTHORIZER = "No Authorizer is configured."  # AclApis' words for create and delete
NO_AUTHORIZER_DESCRIBE = "No Authorizer is configured on the broker"
NOT_AUTHORIZED = "Cluster authorization failed."

CreationResult = CreateAclsResponse.AclCreationResult
FilterResult = DeleteAclsResponse.DeleteAclsFilterResult
MatchingAcl = DeleteAclsResponse.DeleteAclsMatchingAcl
Resource = DescribeAclsResponse.DescribeAclsResource
Description = DescribeAclsResponse.AclDescription

# One ACL change at a time per server (the file lock spans processes), kept with the broker's authorizer.
_writes: WeakKeyDictionary[Authorizer, asyncio.Lock] = WeakKeyDictionary()


async def _change(authorizer: Authorizer, compute: Callable[[list[AclBinding]], tuple[list[AclBinding], Any]]
                  ) -> tuple[Any, str | None]:
    """Read the file, compute the new bindings, write them durably (all under the file's lock, off the
    loop), then put them in force. Returns what `compute` reported, or why nothing was written."""
    path: Path = authorizer.path

    def read_modify_write() -> Any:
        with locked(path):
            current = read_acls(path)
            updated, report = compute(current)
            if updated != current:
                write_acls(path, updated)
            return report

    async with _writes.setdefault(authorizer, asyncio.Lock()):
        try:
            report = await asyncio.get_running_loop().run_in_executor(None, read_modify_write)
        except (OSError, AclError) as exc:  # nothing was written (a disk error, or a hand-broken file)
            log.error("acls_write_failed", path=str(path), error=str(exc))
            return None, f"Cannot change the ACLs: {exc}"
        finally:
            authorizer.reload_now()
    return report, None


def _may_alter(broker: Broker, ctx: RequestContext) -> tuple[Authorizer | None, tuple[ErrorCode, str]]:
    """The authorizer whose ACLs a CreateAcls/DeleteAcls changes, or why the request is refused as a whole
    (AclApis: ALTER on the cluster first, then whether there is an authorizer at all)."""
    if not permits_cluster(broker, ctx, Operation.ALTER):
        return None, (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NOT_AUTHORIZED)
    if broker.authorizer is None:
        return None, (ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    return broker.authorizer, (ErrorCode.NONE, "")


def _filter(item: Any) -> AclFilter:
    return AclFilter(item.resource_type_filter, item.resource_name_filter, item.pattern_type_filter,
                     item.principal_filter, item.host_filter, item.operation, item.permission_type)


# ---- DescribeAcls

def describe_acls_error(request: Any, code: ErrorCode, version: int) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=int(code), error_message=None, resources=[])


@api(ApiKey.DESCRIBE_ACLS, versions=(0, 3), error_response=describe_acls_error)
def describe_acls(broker: Broker, request: Any, ctx: RequestContext) -> DescribeAclsResponse:
    if not permits_cluster(broker, ctx, Operation.DESCRIBE):
        return DescribeAclsResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                                    error_message=NOT_AUTHORIZED, resources=[])
    if broker.authorizer is None:
        return DescribeAclsResponse(error_code=int(ErrorCode.SECURITY_DISABLED),
                                    error_message=NO_AUTHORIZER_DESCRIBE, resources=[])
    try:
        wanted = acl_admin.check_filter(_filter(request), ctx.api_version)
    except RequestInvalid as exc:
        return DescribeAclsResponse(error_code=int(_code(exc)), error_message=str(exc), resources=[])
    grouped = acl_admin.describe(broker.authorizer.bindings, wanted)
    return DescribeAclsResponse(error_code=0, error_message=None, resources=[
        Resource(resource_type=RESOURCE_TYPE_CODES[rtype], resource_name=name, pattern_type=PATTERN_CODES[pattern],
                 acls=[Description(principal=b.principal, host=b.host, operation=OPERATION_CODES[b.operation],
                                   permission_type=PERMISSION_CODES[b.permission]) for b in bindings])
        for (rtype, name, pattern), bindings in grouped.items()])


def _code(exc: RequestInvalid) -> ErrorCode:
    return ErrorCode.UNSUPPORTED_VERSION if exc.unsupported_version else ErrorCode.INVALID_REQUEST


# ---- CreateAcls

def _all_creations(count: int, code: ErrorCode, message: str | None) -> CreateAclsResponse:
    return CreateAclsResponse(results=[CreationResult(error_code=int(code), error_message=message)
                                       for _ in range(count)])


def create_acls_error(request: Any, code: ErrorCode, version: int) -> CreateAclsResponse:
    return _all_creations(len(request.creations), code, None)


@api(ApiKey.CREATE_ACLS, versions=(0, 3), error_response=create_acls_error)
def create_acls(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    authorizer, refusal = _may_alter(broker, ctx)
    if authorizer is None:
        return _all_creations(len(request.creations), *refusal)
    creations = [Creation(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                          c.operation, c.permission_type) for c in request.creations]
    try:
        acl_admin.check_creations(creations, ctx.api_version)
    except RequestInvalid as exc:
        return _all_creations(len(creations), _code(exc), str(exc))
    return _create(authorizer, creations, ctx)


async def _create(authorizer: Authorizer, creations: list[Creation], ctx: RequestContext) -> CreateAclsResponse:
    refusals, failure = await _change(authorizer, lambda current: acl_admin.create(current, creations))
    if failure is not None:
        return _all_creations(len(creations), ErrorCode.UNKNOWN_SERVER_ERROR, failure)
    added = sum(1 for r in refusals if r is None)
    log.info("acls_created", principal=ctx.principal, client_id=ctx.client_id, created=added,
             refused=len(refusals) - added)
    return CreateAclsResponse(results=[
        CreationResult(error_code=0 if reason is None else int(ErrorCode.INVALID_REQUEST), error_message=reason)
        for reason in refusals])


# ---- DeleteAcls

def _all_filters(count: int, code: ErrorCode, message: str | None) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[FilterResult(error_code=int(code), error_message=message,
                                                           matching_acls=[]) for _ in range(count)])


def delete_acls_error(request: Any, code: ErrorCode, version: int) -> DeleteAclsResponse:
    return _all_filters(len(request.filters), code, None)


@api(ApiKey.DELETE_ACLS, versions=(0, 3), error_response=delete_acls_error)
def delete_acls(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    authorizer, refusal = _may_alter(broker, ctx)
    if authorizer is None:
        return _all_filters(len(request.filters), *refusal)
    try:
        filters = [acl_admin.check_filter(_filter(f), ctx.api_version) for f in request.filters]
    except RequestInvalid as exc:
        return _all_filters(len(request.filters), _code(exc), str(exc))
    return _delete(authorizer, filters, ctx)


async def _delete(authorizer: Authorizer, filters: list[AclFilter], ctx: RequestContext) -> DeleteAclsResponse:
    matched, failure = await _change(authorizer, lambda current: acl_admin.delete(current, filters))
    if failure is not None:
        return _all_filters(len(filters), ErrorCode.UNKNOWN_SERVER_ERROR, failure)
    log.info("acls_deleted", principal=ctx.principal, client_id=ctx.client_id,
             deleted=len({b for found in matched for b in found}))
    return DeleteAclsResponse(filter_results=[
        FilterResult(error_code=0, error_message=None, matching_acls=[
            MatchingAcl(error_code=0, error_message=None, resource_type=RESOURCE_TYPE_CODES[b.resource_type],
                        resource_name=b.resource_name, pattern_type=PATTERN_CODES[b.pattern_type],
                        principal=b.principal, host=b.host, operation=OPERATION_CODES[b.operation],
                        permission_type=PERMISSION_CODES[b.permission]) for b in found])
        for found in matched])
