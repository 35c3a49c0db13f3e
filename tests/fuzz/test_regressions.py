"""Each finding of the fuzzer, kept as a request that once broke the server (see harness.py)."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.frames import encode_request
from protocol.messages import (
    ConsumerGroupDescribeRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    JoinGroupRequest,
    MetadataRequest,
    OffsetCommitRequest,
)
from tests.fuzz.harness import FuzzTarget


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    fuzz_target = FuzzTarget(tmp_path_factory.mktemp("fuzz-regressions"))
    yield fuzz_target
    fuzz_target.close()


def frame(api_key: int, version: int, message) -> bytes:  # type: ignore[no-untyped-def]
    return encode_request(api_key, version, 1, "regression", message)[4:]


@pytest.mark.parametrize("api_key, version, message", [
    # Asking about no groups at all crashed the multi-group fan-out (IndexError on no answers).
    (ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[])),
    (ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=[])),
    # A topic by id before v12: its null name could not be encoded in the v11 response.
    (ApiKey.METADATA, 11, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=uuid.uuid4(),
                                                                                        name=None)])),
    # RetentionTimeMs near int64 max overflowed the stored expire timestamp.
    (ApiKey.OFFSET_COMMIT, 3, OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                                  retention_time_ms=2**63 - 2, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=5)])])),
    # An empty group id was answered with a null GroupId, which v0 cannot encode.
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=["", "g"])),
], ids=["describe-no-groups", "delete-no-groups", "metadata-v11-topic-id", "commit-huge-retention",
        "consumer-group-describe-empty-id"])
def test_former_fuzz_findings_are_answered(target, api_key, version, message):
    target.feed(frame(api_key, version, message))
    assert not target.findings, "\n".join(map(str, target.findings))


def test_a_member_listing_a_protocol_twice_does_not_break_the_vote(target):
    # Found by `make fuzz`: member A lists "range" twice, member B only "roundrobin"; "range" counted
    # two supporters for two members, won the candidacy, and B's vote found nothing.
    def join_frame(member_protocols: list[str]) -> bytes:
        return frame(ApiKey.JOIN_GROUP, 9, JoinGroupRequest(
            group_id="dup-protocols", session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id="",
            group_instance_id=f"i-{len(member_protocols)}", protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=b"") for n in member_protocols]))

    target.feed(join_frame(["range", "range"]))
    target.feed(join_frame(["roundrobin"]))
    assert not target.findings, "\n".join(map(str, target.findings))
