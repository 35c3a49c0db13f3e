from coordinator.log.batch import build_batch
from coordinator.log.dump import dump

from .helpers import open_partition


def test_dump_renders_every_batch_and_record_of_a_partition_directory(tmp_path):
    p = open_partition(tmp_path, "__consumer_offsets-3", segment_bytes=100)
    p.append(build_batch([(b"k1", b"value"), (b"k2", None)], timestamp=1000, producer_id=7, producer_epoch=1,
                         base_sequence=0))
    p.append(build_batch([(None, b"v")], timestamp=2000))
    p.close()
    seen = []
    lines = list(dump(p.path, lambda topic, key, value: seen.append(topic) or f"key={key!r}"))
    batches = [line for line in lines if line.startswith("baseOffset")]
    records = [line for line in lines if line.startswith("|")]
    assert len(batches) == 2 and len(records) == 3
    assert "baseOffset: 0 lastOffset: 1 count: 2" in batches[0] and "crcOk: true" in batches[0]
    assert "producerId: 7 producerEpoch: 1 baseSequence: 0" in batches[0] and "compression: none" in batches[0]
    assert records[1] == "| offset: 1 timestamp: 1000 keySize: 2 valueSize: -1 headers: 0 key=b'k2'"
    assert records[2].endswith("keySize: -1 valueSize: 1 headers: 0 key=None")
    assert set(seen) == {"__consumer_offsets"}
    assert not any(line.startswith("ERROR") for line in lines)


def test_dump_reports_a_bad_crc_and_a_torn_tail_with_their_byte_positions(tmp_path):
    p = open_partition(tmp_path)
    p.append(build_batch([(b"a", b"1")]))
    p.append(build_batch([(b"b", b"2")]))
    p.close()
    path = p.segments[0].path
    data = bytearray(path.read_bytes())
    first_size = p.segments[0].positions[1]
    data[first_size - 1] ^= 0xFF
    path.write_bytes(bytes(data[:-4]))
    lines = list(dump(path, records=False))
    assert "crcOk: false" in lines[1]
    assert lines[2] == f"ERROR {path}: corrupt batch at byte {first_size}: batch length {first_size - 12} " \
                       f"does not fit in {first_size - 4} bytes"
