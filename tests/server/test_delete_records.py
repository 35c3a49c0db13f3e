"""DeleteRecords over the wire: the log start moves, Fetch and ListOffsets honour it, it survives a
restart, and bad input gets Kafka's errors."""

from __future__ import annotations

import uuid

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DeleteRecordsRequest

from .admin_wire import EARLIEST, LATEST, create_topic, fetch, list_offset, produce


def unique(stem: str = "dr") -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def delete_records(wire, version: int, topic: str, *partition_offsets: tuple[int, int]):
    request = DeleteRecordsRequest(timeout_ms=5000, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=topic, partitions=[DeleteRecordsRequest.DeleteRecordsPartition(p, o) for p, o in partition_offsets])])
    [result] = wire.request(ApiKey.DELETE_RECORDS, version, request).topics
    assert result.name == topic
    return {p.partition_index: (p.error_code, p.low_watermark) for p in result.partitions}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delete_records_moves_the_low_watermark_which_fetch_and_list_offsets_honour(wire, version):
    topic = unique()
    create_topic(wire, topic, partitions=2)
    for _ in range(3):
        produce(wire, topic, 0, 4)  # offsets 0..11
    assert delete_records(wire, version, topic, (0, 5)) == {0: (ErrorCode.NONE, 5)}
    assert list_offset(wire, topic, 0, EARLIEST).offset == 5
    assert list_offset(wire, topic, 0, LATEST).offset == 12
    below = fetch(wire, topic, 0, 4)
    # As Kafka: an out-of-range fetch reports no offsets, only the error.
    assert (below.error_code, below.high_watermark, below.log_start_offset) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1, -1)
    at = fetch(wire, topic, 0, 5)
    assert (at.error_code, at.log_start_offset, at.high_watermark) == (ErrorCode.NONE, 5, 12)
    assert at.records  # the batch holding offset 5 (from 4), whole, as Kafka returns it
    # Asking for less than the current start changes nothing; -1 means the high watermark.
    assert delete_records(wire, version, topic, (0, 2), (1, -1)) == {0: (ErrorCode.NONE, 5), 1: (ErrorCode.NONE, 0)}
    assert delete_records(wire, version, topic, (0, -1)) == {0: (ErrorCode.NONE, 12)}
    assert list_offset(wire, topic, 0, EARLIEST).offset == 12


def test_bad_offsets_unknown_partitions_and_compacted_topics_get_kafkas_errors(wire):
    topic = unique()
    create_topic(wire, topic)
    produce(wire, topic, 0, 3)
    assert delete_records(wire, 2, topic, (0, 4), (1, 0)) == {
        0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1), 1: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert delete_records(wire, 2, topic, (0, -2)) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert delete_records(wire, 2, unique("missing"), (0, 0)) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert list_offset(wire, topic, 0, EARLIEST).offset == 0  # nothing half-applied
    compacted = unique("compacted")
    create_topic(wire, compacted, configs={"cleanup.policy": "compact"})
    assert delete_records(wire, 2, compacted, (0, 0)) == {0: (ErrorCode.POLICY_VIOLATION, -1)}


def test_the_low_watermark_survives_a_restart(server_factory, connect):
    server = server_factory("log.segment.bytes=200")  # a few records per segment
    wire = connect(server)
    topic = unique()
    create_topic(wire, topic)
    for _ in range(10):
        produce(wire, topic, 0, 2)
    assert delete_records(wire, 1, topic, (0, 13)) == {0: (ErrorCode.NONE, 13)}
    partition_dir = server.data_dir / f"{topic}-0"
    bases = sorted(int(p.name.split(".")[0]) for p in partition_dir.glob("*.log"))
    assert bases[0] <= 13 and (len(bases) == 1 or bases[1] > 13)  # segments wholly below went
    server.stop()
    server.start()
    server.wait_ready()
    wire = connect(server)
    assert list_offset(wire, topic, 0, EARLIEST).offset == 13
    assert fetch(wire, topic, 0, 12).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (server.data_dir / "log-start-offset-checkpoint").read_text().splitlines()[2] == f"{topic} 0 13"


def test_list_offsets_special_timestamps_need_their_version_as_in_kafka(wire):
    from protocol.messages import ListOffsetsRequest as L

    topic = unique("lo")
    create_topic(wire, topic)
    produce(wire, topic, 0, 4)
    assert delete_records(wire, 2, topic, (0, 2)) == {0: (ErrorCode.NONE, 2)}

    def answer(version: int, timestamp: int) -> tuple[int, int]:
        request = L(replica_id=-1, isolation_level=0, timeout_ms=1000, topics=[
            L.ListOffsetsTopic(topic, [L.ListOffsetsPartition(0, -1, timestamp, 1)])])
        p = wire.request(ApiKey.LIST_OFFSETS, version, request).topics[0].partitions[0]
        return p.error_code, p.offset

    unsupported = (ErrorCode.UNSUPPORTED_VERSION, -1)
    assert [answer(6, -3), answer(7, -4), answer(8, -5)] == [unsupported] * 3
    assert [answer(7, -3), answer(8, -4), answer(9, -5)] == [(0, 0), (0, 2), (0, -1)]  # -5: nothing tiered
    assert answer(10, -2) == (0, 2)
