"""DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

from coordinator.records import group_metadata_tombstone, offset_commit_tombstone
from protocol.error_codes import ErrorCode
from protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
)
from tests.core.context import CoordinatorContext

Described = DescribeGroupsResponse.DescribedGroup
Member = DescribeGroupsResponse.DescribedGroupMember


def describe(ctx: CoordinatorContext, *group_ids: str):
    return ctx.send(DescribeGroupsRequest(groups=list(group_ids)), 5).response.groups


def test_describe_stable_and_rebalancing_group() -> None:
    # docs/spec/classic-groups.md#case-67
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    [g] = describe(ctx, "g")
    assert g == Described(group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
                          members=[Member(member_id=leader, client_id="client", client_host="/127.0.0.1",
                                          member_metadata=b"r", member_assignment=b"a-0"),
                                   Member(member_id=follower, client_id="client", client_host="/127.0.0.1",
                                          member_metadata=b"r", member_assignment=b"a-1")])
    ctx.join("g", leader)
    [g] = describe(ctx, "g")
    assert (g.group_state, g.protocol_data, g.members[0].member_metadata) == ("PreparingRebalance", "", b"")


def test_describe_unknown_group_is_dead_without_error() -> None:
    # docs/spec/classic-groups.md#case-68
    ctx = CoordinatorContext()
    assert describe(ctx, "nope") == [Described(group_id="nope", group_state="Dead")]


def test_list_groups_filters_by_state_and_type() -> None:
    # docs/spec/classic-groups.md#case-69 (this shard hosts classic groups only)
    ctx = CoordinatorContext()
    ctx.stable_group("a")
    ctx.commit("b", {("t", 0): 1})

    def listed(states: list[str], types: list[str], version: int = 5) -> list[tuple[str, str]]:
        response = ctx.send(ListGroupsRequest(states_filter=states, types_filter=types), version).response
        return [(g.group_id, g.group_state) for g in response.groups]

    assert listed([], []) == [("a", "Stable"), ("b", "Empty")]
    assert listed([" STABLE "], []) == [("a", "Stable")]
    assert listed([], ["Classic"]) == [("a", "Stable"), ("b", "Empty")]
    assert listed([], ["consumer"]) == []
    assert listed(["bogus"], []) == []


def test_delete_groups_by_state() -> None:
    # docs/spec/classic-groups.md#case-70
    ctx = CoordinatorContext()
    ctx.commit("e", {("t", 0): 1, ("t", 1): 2})
    ctx.stable_group("s")
    out = ctx.send(DeleteGroupsRequest(groups_names=["e", "s", "nope", "e"]), 2)
    R = DeleteGroupsResponse.DeletableGroupResult
    assert out.response == DeleteGroupsResponse(results=[
        R(group_id="e", error_code=ErrorCode.NONE), R(group_id="s", error_code=ErrorCode.NON_EMPTY_GROUP),
        R(group_id="nope", error_code=ErrorCode.GROUP_ID_NOT_FOUND)])
    assert out.records == [offset_commit_tombstone("e", "t", 0), offset_commit_tombstone("e", "t", 1),
                           group_metadata_tombstone("e")]
    assert ctx.shard.state.groups.classic("e") is None and "e" not in ctx.shard.state.offsets
    ctx.assert_replay_matches()
