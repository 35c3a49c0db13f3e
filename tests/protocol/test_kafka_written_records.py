"""Record values as Apache Kafka 4.4's broker writes them to __consumer_offsets decode with our codec.

The bytes below were read back from the segment the Kafka oracle (tests/kafka_oracle.py) wrote during
the differential run; tests/differential/test_kafka_log.py reads a whole such segment.
"""

from __future__ import annotations

from protocol.messages import ConsumerGroupMemberMetadataValue

# A consumer-protocol member: Kafka writes the tagged ClassicMemberMetadata (tag 0) even when it is
# null, as one byte: an unsigned varint 0 (present would be 1, then the struct).
KAFKA_MEMBER_METADATA_V0 = bytes.fromhex(
    "0000" "00" "00" "075f6177616974" "0b2f3132372e302e302e31" "02" "0c63672d3533303731366436" "01"
    "00007530" "00" "01" "00" "01" "00")


def test_kafka_null_tagged_struct_decodes_as_null() -> None:
    value = ConsumerGroupMemberMetadataValue.decode(KAFKA_MEMBER_METADATA_V0[2:], 0)
    assert value.classic_member_metadata is None
    assert (value.client_id, value.subscribed_topic_names, value.subscribed_topic_regex,
            value.rebalance_timeout_ms) == ("_await", ["cg-530716d6"], "", 30000)


def test_present_tagged_struct_still_round_trips() -> None:
    Classic = ConsumerGroupMemberMetadataValue.ClassicMemberMetadata
    value = ConsumerGroupMemberMetadataValue(
        client_id="c", client_host="/h", subscribed_topic_names=["t"],
        classic_member_metadata=Classic(session_timeout_ms=45000, supported_protocols=[
            ConsumerGroupMemberMetadataValue.ClassicProtocol(name="range", metadata=b"m")]))
    assert ConsumerGroupMemberMetadataValue.decode(value.encode(0), 0) == value
