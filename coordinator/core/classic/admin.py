"""DescribeGroups, ListGroups and DeleteGroups over the classic groups of one shard.

These APIs may name groups of several coordinator partitions: the server splits a
request by `coordinator.records.partition_for` and concatenates the per-shard answers.

Version notes: DescribeGroups v3 authorized operations (left at the default),
v4 member instance ids; ListGroups v4 StatesFilter, v5 TypesFilter; DeleteGroups v2 flexible.
"""

from __future__ import annotations

from coordinator.core.classic.state import GroupState
from coordinator.core.offsets import group_tombstones, offset_tombstones
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import Record
from protocol.error_codes import ErrorCode
from protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)

S = GroupState
Described = DescribeGroupsResponse.DescribedGroup
DescribedMember = DescribeGroupsResponse.DescribedGroupMember
Listed = ListGroupsResponse.ListedGroup
Deleted = DeleteGroupsResponse.DeletableGroupResult
CLASSIC = "classic"


def describe_groups(st: ShardState, req: DescribeGroupsRequest, ctx: RequestContext) -> Outcome:
    return Outcome(response=DescribeGroupsResponse(groups=[_describe(st, group_id) for group_id in req.groups]))


def _describe(st: ShardState, group_id: str) -> Described:
    if st.loading:
        return Described(group_id=group_id, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    group = st.groups.classic(group_id)
    if group is None or group.state is S.DEAD:
        return Described(group_id=group_id, group_state=S.DEAD.value)
    stable = group.state is S.STABLE
    return Described(
        group_id=group_id, group_state=group.state.value, protocol_type=group.protocol_type or "",
        # The protocol and member metadata mean something only once the generation is settled.
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                 client_id=m.client_id, client_host=m.client_host,
                                 member_metadata=m.metadata(group.protocol_name) if stable else b"",
                                 member_assignment=m.assignment)
                 for m in group.members.values()],
    )


def list_groups(st: ShardState, req: ListGroupsRequest, ctx: RequestContext) -> Outcome:
    if st.loading:
        return Outcome(response=ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    version = ctx.api_version
    states = {s.strip().lower() for s in req.states_filter} if version >= 4 else set()
    types = {t.strip().lower() for t in req.types_filter} if version >= 5 else set()
    listed = [
        Listed(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state.value, group_type=CLASSIC)
        for g in sorted(st.groups.classic_groups(), key=lambda g: g.group_id)
        if (not states or g.state.value.lower() in states) and (not types or CLASSIC in types)
    ]
    return Outcome(response=ListGroupsResponse(groups=listed))


def delete_groups(st: ShardState, req: DeleteGroupsRequest, ctx: RequestContext) -> Outcome:
    records: list[Record] = []
    results = []
    for group_id in dict.fromkeys(req.groups_names):  # de-duplicated, first-seen order
        code = _delete_error(st, group_id)
        if code is ErrorCode.NONE:
            records.extend(offset_tombstones(st, group_id))
            records.extend(group_tombstones(st, group_id))
        results.append(Deleted(group_id=group_id, error_code=code))
    return Outcome(records=records, response=DeleteGroupsResponse(results=results))


def _delete_error(st: ShardState, group_id: str) -> ErrorCode:
    if st.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    group = st.groups.classic(group_id)
    if group is None or group.state is S.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.state is not S.EMPTY:
        return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE
