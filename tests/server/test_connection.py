"""The network shell: framing limits, unknown APIs and versions, ordering of pipelined requests."""

from __future__ import annotations

import json
import struct
import time

from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from tests.server.admin_wire import ensure_topic

SOCKET_REQUEST_MAX_BYTES = 104857600  # the default


def header_v1(api_key: int, version: int, correlation_id: int, client_id: bytes = b"t") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frame_larger_than_socket_request_max_bytes_closes_before_the_body_is_sent(wire):
    wire.send_raw(struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1))  # the size alone, no body
    assert wire.closed_by_server()


def test_frame_smaller_than_a_request_header_closes(wire):
    wire.send_raw(frame(b"\x00\x12\x00"))
    assert wire.closed_by_server()


def test_negative_frame_size_closes(wire):
    wire.send_raw(struct.pack(">i", -5))
    assert wire.closed_by_server()


def test_configured_socket_request_max_bytes_is_enforced(server_factory, connect):
    srv = server_factory("socket.request.max.bytes=1000")
    wire = connect(srv)
    assert wire.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE
    wire.send_raw(struct.pack(">i", 1001))
    assert wire.closed_by_server()


def test_unknown_api_key_closes_the_connection(wire):
    wire.send_raw(frame(header_v1(9999, 0, 1)))
    assert wire.closed_by_server()


def test_api_known_to_kafka_but_not_served_closes_the_connection(wire):
    wire.send_raw(frame(header_v1(57, 0, 1)))  # UpdateFeatures: not in our registry
    assert wire.closed_by_server()


def test_version_outside_the_schema_range_closes_the_connection(wire):
    wire.send_raw(frame(header_v1(ApiKey.METADATA, 99, 1)))
    assert wire.closed_by_server()


def test_version_inside_the_schema_but_not_served_gets_unsupported_version(wire):
    # CreateTopics v0/v1 exist in Kafka's schema; we serve v2-7.
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic("old-client", 1, 1, [], [])])
    response = wire.request(ApiKey.CREATE_TOPICS, 0, request)
    assert [(t.name, t.error_code) for t in response.topics] == [("old-client", ErrorCode.UNSUPPORTED_VERSION)]
    # Not a protocol error: the connection goes on.
    assert wire.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE


def test_malformed_request_body_closes_the_connection(wire):
    # Metadata v1: a topics array claiming 5 entries, then nothing.
    wire.send_raw(frame(header_v1(ApiKey.METADATA, 1, 1) + struct.pack(">i", 5)))
    assert wire.closed_by_server()


def test_pipelined_requests_are_answered_in_order(wire):
    sent = []
    burst = []
    for i in range(300):
        correlation_id = 1000 + i
        if i % 3 == 0:
            burst.append(encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "p", ApiVersionsRequest()))
            sent.append((correlation_id, ApiKey.API_VERSIONS, 0))
        elif i % 3 == 1:
            burst.append(encode_request(ApiKey.METADATA, 9, correlation_id, "p", MetadataRequest(topics=[])))
            sent.append((correlation_id, ApiKey.METADATA, 9))
        else:
            burst.append(encode_request(ApiKey.DESCRIBE_CLUSTER, 0, correlation_id, "p", DescribeClusterRequest()))
            sent.append((correlation_id, ApiKey.DESCRIBE_CLUSTER, 0))
    started = time.monotonic()
    wire.send_raw(b"".join(burst))
    for correlation_id, api_key, version in sent:
        got, _ = wire.receive(api_key, version)
        assert got == correlation_id
    assert time.monotonic() - started < 3.0


def test_requests_split_across_many_writes_are_reassembled(wire):
    data = encode_request(ApiKey.API_VERSIONS, 3, 42, "split", ApiVersionsRequest("split", "1"))
    for i in range(len(data)):
        wire.send_raw(data[i:i + 1])
    got, response = wire.receive(ApiKey.API_VERSIONS, 3)
    assert (got, response.error_code) == (42, ErrorCode.NONE)


def test_a_frame_larger_than_the_read_buffer_limit_is_still_read(wire):
    # 6 MB of trailing bytes after an ApiVersions v0 request (Kafka ignores trailing bytes): more
    # than the connection buffers before it pauses reading, yet a single legal frame.
    payload = header_v1(ApiKey.API_VERSIONS, 0, 7) + bytes(6 * 1024 * 1024)
    wire.send_raw(frame(payload))
    got, response = wire.receive(ApiKey.API_VERSIONS, 0)
    assert (got, response.error_code) == (7, ErrorCode.NONE)


def test_idle_connection_is_closed_after_connections_max_idle_ms(server_factory, connect):
    srv = server_factory("connections.max.idle.ms=300")
    idle = connect(srv)
    assert idle.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE
    started = time.monotonic()
    assert idle.closed_by_server(timeout=5.0)
    assert time.monotonic() - started < 3.0


def test_null_client_id_is_accepted(shared_server, connect):
    wire = connect(shared_server, client_id=None)
    assert wire.request(ApiKey.API_VERSIONS, 1, ApiVersionsRequest()).error_code == ErrorCode.NONE


def test_a_burst_of_commits_and_requests_answered_at_once_keeps_request_order(wire):
    """A burst of commits (each waiting for its fsync, the connection going on meanwhile) and requests
    answered at once: every answer leaves in request order, the commits' after their fsync."""
    ensure_topic(wire, "pip", partitions=3)
    sent = []
    burst = []
    for i in range(120):
        correlation_id = 5000 + i
        if i % 2 == 0:
            request = OffsetCommitRequest(group_id=f"pipelined-{i % 4}", generation_id_or_member_epoch=-1,
                                          member_id="", topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                              name="pip", partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                                                  partition_index=p, committed_offset=i) for p in range(3)])])
            burst.append(encode_request(ApiKey.OFFSET_COMMIT, 8, correlation_id, "p", request))
            sent.append((correlation_id, ApiKey.OFFSET_COMMIT, 8))
        else:
            burst.append(encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "p", ApiVersionsRequest()))
            sent.append((correlation_id, ApiKey.API_VERSIONS, 0))
    wire.send_raw(b"".join(burst))
    for correlation_id, api_key, version in sent:
        got, response = wire.receive(api_key, version)
        assert got == correlation_id
        if api_key == ApiKey.OFFSET_COMMIT:
            assert {p.error_code for t in response.topics for p in t.partitions} == {ErrorCode.NONE}
    fetched = wire.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(group_id="pipelined-2", topics=None))
    assert [(p.partition_index, p.committed_offset) for p in fetched.topics[0].partitions] == [
        (0, 118), (1, 118), (2, 118)]


def test_a_malformed_frame_behind_commits_closes_only_after_their_answers(wire):
    request = OffsetCommitRequest(group_id="closing", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])
    commits = [encode_request(ApiKey.OFFSET_COMMIT, 8, 70 + i, "p", request) for i in range(5)]
    bad = frame(header_v1(ApiKey.METADATA, 1, 99) + struct.pack(">i", 5))
    wire.send_raw(b"".join(commits) + bad)
    for i in range(5):
        got, _response = wire.receive(ApiKey.OFFSET_COMMIT, 8)
        assert got == 70 + i
    assert wire.closed_by_server()


def test_pipelined_commits_on_one_connection_share_fsyncs(server_factory, connect):
    """A connection goes on to its next commits while one waits for its fsync, so a burst of 40
    commits of one group is carried by fewer fsync rounds than commits (before, the connection held
    for each fsync: one round per commit). Their answers come back in order, each committed."""
    srv = server_factory()
    wire = connect(srv)
    ensure_topic(wire, "burst", partitions=2)
    commits = 40
    burst = [encode_request(ApiKey.OFFSET_COMMIT, 8, 300 + i, "p", OffsetCommitRequest(
        group_id="burst", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="burst", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=i)
                for p in range(2)])])) for i in range(commits)]
    wire.send_raw(b"".join(burst))
    for i in range(commits):
        got, response = wire.receive(ApiKey.OFFSET_COMMIT, 8)
        assert got == 300 + i
        assert {p.error_code for t in response.topics for p in t.partitions} == {ErrorCode.NONE}
    assert srv.stop() == 0
    [stats] = [json.loads(line) for line in srv.log_path.read_text().splitlines() if '"log_flush_stats"' in line]
    assert stats["durable_waits"] >= commits
    assert stats["fsync_rounds"] < commits, stats
