"""A failed fsync of one `__consumer_offsets` partition, in a flush round that covers several: the
commits it covered are answered NOT_COORDINATOR (docs/spec/classic-groups.md#write-error-mapping),
the commits of the other partitions in the same round succeed, and a connection's answers keep
request order throughout. The fsync is the only part replaced: no fault injection reaches a real
disk's fsync without privileges."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

from coordinator.records import partition_for
from protocol.api_keys import ApiKey
from protocol.client import decode_response, encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsRequest, CreateTopicsRequest, OffsetCommitRequest
from tests.bench.heartbeat_path import open_connection, request
from tests.bench.in_process import start_server, stop_server

OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, the default


def _groups_on_two_partitions() -> tuple[str, str]:
    good = "fsync-good"
    bad = next(f"fsync-bad-{i}" for i in range(100)
               if partition_for(f"fsync-bad-{i}", OFFSETS_PARTITIONS) != partition_for(good, OFFSETS_PARTITIONS))
    return good, bad


def _commit(group: str, correlation_id: int, offset: int) -> bytes:
    return encode_request(ApiKey.OFFSET_COMMIT, 8, correlation_id, "t", OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset)
                for p in range(2)])]))


async def test_a_failed_fsync_fails_only_the_commits_it_covered_and_answers_keep_request_order(tmp_path: Path) -> None:
    server = await start_server([f"log.dirs={tmp_path}"], tune_gc=False)
    try:
        conn, transport = open_connection(server, 41_000)
        await request(conn, transport, ApiKey.CREATE_TOPICS, CreateTopicsRequest(timeout_ms=5000, topics=[
            CreateTopicsRequest.CreatableTopic(name="t", num_partitions=2, replication_factor=1)]))
        good, bad = _groups_on_two_partitions()
        failing = f"__consumer_offsets-{partition_for(bad, OFFSETS_PARTITIONS)}"
        flusher = server.broker.data.logs.flusher
        real_fsync = flusher.fsync

        def fsync(fd: int) -> None:
            if Path(os.readlink(f"/proc/self/fd/{fd}")).parent.name == failing:
                raise OSError(errno.EIO, "EIO")
            real_fsync(fd)

        flusher.fsync = fsync
        rounds = flusher.fsync_rounds
        sent: list[tuple[int, Any]] = []  # (correlation id, the group committed, or None: ApiVersions)
        burst = []
        for i in range(12):
            correlation_id = 100 + i
            if i % 3 == 2:
                burst.append(encode_request(ApiKey.API_VERSIONS, 0, correlation_id, "t", ApiVersionsRequest()))
                sent.append((correlation_id, None))
            else:
                group = good if i % 2 == 0 else bad
                burst.append(_commit(group, correlation_id, i))
                sent.append((correlation_id, group))
        conn.data_received(b"".join(burst))  # one read: every commit is appended before the round starts
        frames: list[bytes] = []
        for _ in range(500):
            frames += transport.take_frames()
            if len(frames) == len(sent):
                break
            await asyncio.sleep(0.005)
        assert len(frames) == len(sent)
        for frame, (correlation_id, group) in zip(frames, sent, strict=True):
            api_key, version = (ApiKey.API_VERSIONS, 0) if group is None else (ApiKey.OFFSET_COMMIT, 8)
            got, response = decode_response(api_key, version, frame)
            assert got == correlation_id
            if group is not None:
                codes = {p.error_code for t in response.topics for p in t.partitions}
                assert codes == ({ErrorCode.NONE} if group == good else {ErrorCode.NOT_COORDINATOR}), (group, codes)
        assert flusher.fsync_rounds == rounds + 1  # both partitions in one round
    finally:
        await stop_server(server)
