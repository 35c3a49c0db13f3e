"""Error answers for group APIs whose responses carry errors per partition or per group.

When a whole request fails (its records could not be written, its coordinator partition is
unavailable) every entity it named gets the error, as Kafka answers. An empty response would
not do: a client reads a commit response without its partitions as nothing having failed.
"""

from __future__ import annotations

from typing import Any

from protocol.error_codes import ErrorCode
from protocol.messages import (
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    OffsetCommitResponse,
    OffsetDeleteResponse,
    OffsetFetchResponse,
)

NO_OFFSET = -1


def offset_commit_error(request: Any, code: ErrorCode, version: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=offset_commit_error_topics(request.topics, code))


def offset_commit_error_topic(name: str, partitions: list[int], code: int) -> Any:
    return OffsetCommitResponse.OffsetCommitResponseTopic(name=name, partitions=[
        OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p, error_code=code) for p in partitions])


def offset_commit_error_topics(topics: list[Any], code: ErrorCode) -> list[Any]:
    return [OffsetCommitResponse.OffsetCommitResponseTopic(name=t.name, partitions=[
        OffsetCommitResponse.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
        for p in t.partitions]) for t in topics]


def offset_delete_error_topic(name: str, partitions: list[int], code: int) -> Any:
    return OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name, partitions=[
        OffsetDeleteResponse.OffsetDeleteResponsePartition(partition_index=p, error_code=code) for p in partitions])


def offset_fetch_error(request: Any, code: ErrorCode, version: int) -> OffsetFetchResponse:
    if version >= 8:
        return OffsetFetchResponse(groups=[
            OffsetFetchResponse.OffsetFetchResponseGroup(group_id=g.group_id, error_code=code) for g in request.groups])
    if version >= 2:  # a top-level error code says it for the whole group
        return OffsetFetchResponse(error_code=code)
    return OffsetFetchResponse(topics=[
        OffsetFetchResponse.OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponse.OffsetFetchResponsePartition(partition_index=p, committed_offset=NO_OFFSET,
                                                             metadata="", error_code=code)
            for p in t.partition_indexes])
        for t in request.topics or []])


def delete_groups_error(request: Any, code: ErrorCode, version: int) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names])


def describe_groups_error(request: Any, code: ErrorCode, version: int) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[
        DescribeGroupsResponse.DescribedGroup(group_id=g, error_code=code, group_state="", protocol_type="",
                                              protocol_data="")
        for g in request.groups])
