"""Out of space: commits and produces get Kafka's error codes, nothing half-written stays, and the
server carries on by itself once space returns.

The server process's file size limit (RLIMIT_FSIZE, lowered and raised again with ``prlimit --pid``
while it runs) stands in for a full disk: a write past it fails with EFBIG, or writes short,
exactly where a full filesystem would fail with ENOSPC. No privileges or mounts needed. The limit
holds for the server's own log file too (as a full disk would): its log lines are dropped meanwhile,
which must not disturb anything else.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess

from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.log.batch import build_batch
from coordinator.records import partition_for
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import OffsetCommitRequest, OffsetFetchRequest, ProduceRequest
from tests.clients.support import require_tool
from tests.conftest import server_command

OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, the default


def _commit(wire, offset: int) -> list[int]:
    response = wire.request(ApiKey.OFFSET_COMMIT, 8, OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]))
    return [p.error_code for t in response.topics for p in t.partitions]


def _committed(wire) -> int:
    response = wire.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name="t", partition_indexes=[0])]))
    [partition] = response.topics[0].partitions
    assert partition.error_code == ErrorCode.NONE
    return partition.committed_offset


def _produce(wire, value: bytes) -> int:
    response = wire.request(ApiKey.PRODUCE, 9, ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=build_batch([(b"k", value)]))])]))
    return response.responses[0].partition_responses[0].error_code


def _set_file_size_limit(pid: int, limit: int | str) -> None:
    subprocess.run([require_tool("prlimit"), "--pid", str(pid), f"--fsize={limit}:unlimited"], check=True)


def test_out_of_space_answers_with_error_codes_and_the_server_recovers_when_space_returns(server_factory, connect):
    server = server_factory()
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)
    wire = connect(server)
    assert _commit(wire, 10) == [ErrorCode.NONE]
    assert _produce(wire, b"before") == ErrorCode.NONE
    segment = next((server.data_dir / f"__consumer_offsets-{partition_for('g', OFFSETS_PARTITIONS)}").glob("*.log"))
    full_at = segment.stat().st_size

    _set_file_size_limit(server.proc.pid, full_at)  # "the disk is full": no file may grow past this
    assert _commit(wire, 20) == [ErrorCode.NOT_COORDINATOR]  # what Kafka answers when the write fails
    assert _produce(wire, b"x" * (2 * full_at)) == ErrorCode.KAFKA_STORAGE_ERROR
    assert _commit(wire, 21) == [ErrorCode.NOT_COORDINATOR]
    assert _committed(wire) == 10  # the refused commits left no trace in the coordinator's memory
    assert segment.stat().st_size == full_at  # nor on disk

    _set_file_size_limit(server.proc.pid, "unlimited")  # space returns
    assert _commit(wire, 30) == [ErrorCode.NONE]
    assert _produce(wire, b"after") == ErrorCode.NONE
    assert _committed(wire) == 30

    wire.close()
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    server.stop()
    server.start()
    server.wait_ready()
    assert _committed(connect(server)) == 30
    assert server.stop() == 0
    dump = subprocess.run([*server_command(), "log", "dump", "--no-records", str(server.data_dir)],
                          capture_output=True, text=True, timeout=60)
    assert dump.returncode == 0, dump.stdout[-2000:] + dump.stderr[-2000:]  # no torn or corrupt batch anywhere
    assert "t-0/00000000000000000000.log: 2 batches" in dump.stdout  # before and after: the refused one left nothing
