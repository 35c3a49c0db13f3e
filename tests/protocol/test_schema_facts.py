"""Our schemas/ hold exactly the structural facts of the shipped Kafka protocol.

The reference is ../shared/reference/kafka-protocol-facts.json (next to the repository),
extracted from apache/kafka's own message JSON files. Descriptions ("about") are ours and
not compared; every other key is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from protocol.apis import API_SPECS
from protocol.messages import MESSAGES
from schemas import SCHEMA_DIR

FACTS_PATH = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "kafka-protocol-facts.json"
FACT_SECTIONS = ("messages", "coordinatorRecords", "headers", "embeddedProtocols")

_CHECKED_AGAINST_KAFKA_JAR = ("API {}, not in the facts snapshot; held against Kafka 4.4's own file "
                              "(test_schemas_against_kafka.py)")

_SHARE_RECORD = ("record type {} (share groups, KIP-932); held against kafka-{}-coordinator 4.4's own file "
                 "(test_schemas_against_kafka.py)")
_KAFKA_4_SCHEMA = "API {}, {}, flexible {}; not in the facts snapshot: Kafka 4.x's (kafka-python 3.0.12 bundles it)"
#: Schema files of ours that have no counterpart in the facts, each with the reason it exists.
EXTRA_SCHEMAS_ALLOWED: dict[str, str] = {
    "ClassicGroupReasonKey": "groupcoord record type 30000: last KIP-800 reason of a classic group (not Kafka's)",
    "ClassicGroupReasonValue": "groupcoord record type 30000: last KIP-800 reason of a classic group (not Kafka's)",
    "ConsumerGroupRegularExpressionKey": "record type 16 (KIP-848 regex subscriptions, Kafka 4.0), newer than the "
                                         "facts snapshot; from apache/kafka group-coordinator/src/main/resources/"
                                         "common/message. Kafka 4.4 writes it; log dump must name it",
    "ConsumerGroupRegularExpressionValue": "record type 16's value (v0, flexible 0+), as its key",
    "IncrementalAlterConfigsRequest": "API 44, not in the facts snapshot; from apache/kafka "
                                      "clients/src/main/resources/common/message (v0-1, flexible 1+)",
    "IncrementalAlterConfigsResponse": "API 44, not in the facts snapshot; from apache/kafka "
                                       "clients/src/main/resources/common/message (v0-1, flexible 1+)",
    "CreateAclsRequest": "API 30, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                         "clients/src/main/resources/common/message/CreateAclsRequest.json (v0-3, flexible 2+)",
    "CreateAclsResponse": "API 30, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                          "clients/src/main/resources/common/message/CreateAclsResponse.json (v0-3, flexible 2+)",
    "DescribeAclsRequest": "API 29, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                           "clients/src/main/resources/common/message/DescribeAclsRequest.json (v0-3, flexible 2+)",
    "DescribeAclsResponse": "API 29, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                            "clients/src/main/resources/common/message/DescribeAclsResponse.json (v0-3, flexible 2+)",
    "DeleteAclsRequest": "API 31, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                         "clients/src/main/resources/common/message/DeleteAclsRequest.json (v0-3, flexible 2+)",
    "DeleteAclsResponse": "API 31, not in the facts snapshot; every fact but 'about' equal to apache/kafka@1eb76443 "
                          "clients/src/main/resources/common/message/DeleteAclsResponse.json (v0-3, flexible 2+)",
    "AlterConfigsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(33),
    "ShareGroupMemberMetadataKey": _SHARE_RECORD.format(10, "group"),
    "ShareGroupMemberMetadataValue": _SHARE_RECORD.format(10, "group"),
    "ShareGroupMetadataKey": _SHARE_RECORD.format(11, "group"),
    "ShareGroupMetadataValue": _SHARE_RECORD.format(11, "group"),
    "ShareGroupTargetAssignmentMetadataKey": _SHARE_RECORD.format(12, "group"),
    "ShareGroupTargetAssignmentMetadataValue": _SHARE_RECORD.format(12, "group"),
    "ShareGroupTargetAssignmentMemberKey": _SHARE_RECORD.format(13, "group"),
    "ShareGroupTargetAssignmentMemberValue": _SHARE_RECORD.format(13, "group"),
    "ShareGroupCurrentMemberAssignmentKey": _SHARE_RECORD.format(14, "group"),
    "ShareGroupCurrentMemberAssignmentValue": _SHARE_RECORD.format(14, "group"),
    "ShareGroupStatePartitionMetadataKey": _SHARE_RECORD.format(15, "group"),
    "ShareGroupStatePartitionMetadataValue": _SHARE_RECORD.format(15, "group"),
    "ShareSnapshotKey": _SHARE_RECORD.format(0, "share"),
    "ShareSnapshotValue": _SHARE_RECORD.format(0, "share"),
    "ShareUpdateKey": _SHARE_RECORD.format(1, "share"),
    "ShareUpdateValue": _SHARE_RECORD.format(1, "share"),
    "ShareGroupHeartbeatRequest": _CHECKED_AGAINST_KAFKA_JAR.format(76),
    "ShareGroupHeartbeatResponse": _CHECKED_AGAINST_KAFKA_JAR.format(76),
    "ShareGroupDescribeRequest": _CHECKED_AGAINST_KAFKA_JAR.format(77),
    "ShareGroupDescribeResponse": _CHECKED_AGAINST_KAFKA_JAR.format(77),
    "ShareFetchRequest": _CHECKED_AGAINST_KAFKA_JAR.format(78),
    "ShareFetchResponse": _CHECKED_AGAINST_KAFKA_JAR.format(78),
    "ShareAcknowledgeRequest": _CHECKED_AGAINST_KAFKA_JAR.format(79),
    "ShareAcknowledgeResponse": _CHECKED_AGAINST_KAFKA_JAR.format(79),
    "WriteTxnMarkersRequest": _CHECKED_AGAINST_KAFKA_JAR.format(27),
    "WriteTxnMarkersResponse": _CHECKED_AGAINST_KAFKA_JAR.format(27),
    "DescribeShareGroupOffsetsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(90),
    "DescribeShareGroupOffsetsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(90),
    "AlterShareGroupOffsetsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(91),
    "AlterShareGroupOffsetsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(91),
    "DeleteShareGroupOffsetsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(92),
    "DeleteShareGroupOffsetsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(92),
    "AlterConfigsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(33),
    "AlterPartitionReassignmentsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(45),
    "AlterPartitionReassignmentsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(45),
    "DeleteRecordsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(21),
    "DeleteRecordsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(21),
    "DescribeLogDirsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(35),
    "DescribeLogDirsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(35),
    "CreatePartitionsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(37),
    "CreatePartitionsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(37),
    "DescribeQuorumRequest": _CHECKED_AGAINST_KAFKA_JAR.format(55),
    "DescribeQuorumResponse": _CHECKED_AGAINST_KAFKA_JAR.format(55),
    "DescribeTopicPartitionsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(75),
    "DescribeTopicPartitionsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(75),
    "ElectLeadersRequest": _CHECKED_AGAINST_KAFKA_JAR.format(43),
    "ElectLeadersResponse": _CHECKED_AGAINST_KAFKA_JAR.format(43),
    "ListPartitionReassignmentsRequest": _CHECKED_AGAINST_KAFKA_JAR.format(46),
    "ListPartitionReassignmentsResponse": _CHECKED_AGAINST_KAFKA_JAR.format(46),
    "AddPartitionsToTxnRequest": _KAFKA_4_SCHEMA.format(24, "v0-5", "3+"),
    "AddPartitionsToTxnResponse": _KAFKA_4_SCHEMA.format(24, "v0-5", "3+"),
    "AddOffsetsToTxnRequest": _KAFKA_4_SCHEMA.format(25, "v0-4", "3+"),
    "AddOffsetsToTxnResponse": _KAFKA_4_SCHEMA.format(25, "v0-4", "3+"),
    "EndTxnRequest": _KAFKA_4_SCHEMA.format(26, "v0-5", "3+"),
    "EndTxnResponse": _KAFKA_4_SCHEMA.format(26, "v0-5", "3+"),
    "TxnOffsetCommitRequest": _KAFKA_4_SCHEMA.format(28, "v0-5", "3+"),
    "TxnOffsetCommitResponse": _KAFKA_4_SCHEMA.format(28, "v0-5", "3+"),
    "DescribeProducersRequest": _KAFKA_4_SCHEMA.format(61, "v0", "0+"),
    "DescribeProducersResponse": _KAFKA_4_SCHEMA.format(61, "v0", "0+"),
    "DescribeTransactionsRequest": _KAFKA_4_SCHEMA.format(65, "v0", "0+"),
    "DescribeTransactionsResponse": _KAFKA_4_SCHEMA.format(65, "v0", "0+"),
    "ListTransactionsRequest": _KAFKA_4_SCHEMA.format(66, "v0-2", "0+"),
    "ListTransactionsResponse": _KAFKA_4_SCHEMA.format(66, "v0-2", "0+"),
    "TransactionLogKey": "__transaction_state key v0 (Kafka's transaction-coordinator TransactionLogKey.json)",
    "TransactionLogValue": "__transaction_state value v0-1 (Kafka's transaction-coordinator TransactionLogValue.json)",
}

#: Fields of ours newer than the facts (which come from the 2024-10 snapshot), by schema, each with
#: its source. They are left out of the comparison; every other field is still compared exactly.
FIELDS_NEWER_THAN_FACTS: dict[str, dict[str, str]] = {
    "ConsumerGroupTargetAssignmentMetadataValue": {
        "AssignmentTimestamp": "KIP-1263, Kafka 4.3: tagged int64, tag 0, default 0 (apache/kafka trunk "
                               "ConsumerGroupTargetAssignmentMetadataValue.json)",
    },
    "ConsumerGroupDescribeResponse": {
        "Groups.Members.MemberType": "v1 (KIP-1099, Kafka 4.1): int8, default -1; Kafka 4.4's AdminClient asks for "
                                     "v1 (held against Kafka 4.4's file by test_schemas_against_kafka.py)",
    },
    "DescribeGroupsResponse": {
        "Groups.ErrorMessage": "v6 (KIP-1043, Kafka 4.0): nullable string, default null; Kafka 4.4's AdminClient "
                               "asks for v6 (held against Kafka 4.4's file by test_schemas_against_kafka.py)",
    },
}

#: Versions of ours newer than the facts: the facts' range is compared, ours reaches further.
VERSIONS_NEWER_THAN_FACTS: dict[str, tuple[str, str]] = {
    "ConsumerGroupDescribeRequest": ("0", "v1 adds MemberType to the response (see FIELDS_NEWER_THAN_FACTS)"),
    "ConsumerGroupDescribeResponse": ("0", "v1 adds MemberType (see FIELDS_NEWER_THAN_FACTS)"),
    "DescribeGroupsRequest": ("0-5", "v6: an unknown group is GROUP_ID_NOT_FOUND (KIP-1043)"),
    "DescribeGroupsResponse": ("0-5", "v6 adds ErrorMessage (see FIELDS_NEWER_THAN_FACTS)"),
    "ProduceRequest": ("0-11", "v12 (Kafka 4.0, KIP-890 part 2) is v11 with implicit partition adds; no field"),
    "ProduceResponse": ("0-11", "v12 is v11 (KIP-890 part 2)"),
}

#: Keys of a schema or field that carry no protocol fact.
NOT_FACTS = frozenset({"about", "source"})

pytestmark = pytest.mark.skipif(not FACTS_PATH.exists(), reason=f"protocol facts not present at {FACTS_PATH}")


def _facts() -> dict[str, Any]:
    return json.loads(FACTS_PATH.read_text())


def _fact_messages() -> dict[str, dict[str, Any]]:
    if not FACTS_PATH.exists():
        return {}
    facts = _facts()
    return {name: schema for section in FACT_SECTIONS for name, schema in facts[section].items()}


def _our_schema(name: str) -> dict[str, Any]:
    """Our schema as the facts snapshot would have it: newer fields and versions taken out."""
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text())
    newer = FIELDS_NEWER_THAN_FACTS.get(name, {})

    def older(fields: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
        kept = []
        for f in fields:
            if prefix + f["name"] in newer:
                continue
            if "fields" in f:
                f = {**f, "fields": older(f["fields"], prefix + f["name"] + ".")}
            kept.append(f)
        return kept

    schema["fields"] = older(schema["fields"], "")
    if name in VERSIONS_NEWER_THAN_FACTS:
        schema["validVersions"] = VERSIONS_NEWER_THAN_FACTS[name][0]
    return schema


def _normalised(value: Any, key: str | None = None) -> Any:
    """Drop descriptions; spell defaults as strings, the way the facts file records them."""
    if isinstance(value, dict):
        return {k: _normalised(v, k) for k, v in value.items() if k not in NOT_FACTS}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if key == "default" and not isinstance(value, str):
        return json.dumps(value)  # true -> "true", -1 -> "-1"
    return value


def _field_paths(fields: list[dict[str, Any]], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every field, nested ones included, by dotted path: lets a failure name the field."""
    out: dict[str, dict[str, Any]] = {}
    for f in fields:
        path = f"{prefix}{f['name']}"
        out[path] = {k: v for k, v in f.items() if k != "fields"}
        out.update(_field_paths(f.get("fields", []), path + "."))
    return out


FACT_MESSAGES = _fact_messages()
FACT_NAMES = sorted(FACT_MESSAGES)


@pytest.mark.parametrize("name", FACT_NAMES)
def test_schema_file_exists_for_every_message_in_the_facts(name: str) -> None:
    assert (SCHEMA_DIR / f"{name}.json").is_file()


@pytest.mark.parametrize("name", FACT_NAMES)
def test_schema_header_facts_are_equal(name: str) -> None:
    fact = _normalised(FACT_MESSAGES[name])
    ours = _normalised(_our_schema(name))
    top_level = {k for k in fact.keys() | ours.keys() if k not in ("fields", "commonStructs")}
    assert {k: ours.get(k) for k in top_level} == {k: fact.get(k) for k in top_level}


@pytest.mark.parametrize("name", FACT_NAMES)
def test_every_field_fact_is_equal(name: str) -> None:
    fact = _normalised(FACT_MESSAGES[name])
    ours = _normalised(_our_schema(name))
    # Field by field first (a readable failure), then the whole tree (order and nesting).
    fact_fields = _field_paths(fact["fields"])
    our_fields = _field_paths(ours["fields"])
    assert sorted(our_fields) == sorted(fact_fields)
    for path, field_fact in fact_fields.items():
        assert our_fields[path] == field_fact, path
    assert ours["fields"] == fact["fields"]


@pytest.mark.parametrize("name", FACT_NAMES)
def test_common_structs_are_equal(name: str) -> None:
    fact = _normalised(FACT_MESSAGES[name])
    ours = _normalised(_our_schema(name))
    assert ours.get("commonStructs") == fact.get("commonStructs")


def test_no_schema_file_outside_the_facts_unless_allowed() -> None:
    ours = {p.stem for p in SCHEMA_DIR.glob("*.json")}
    extra = ours - set(FACT_MESSAGES)
    assert extra <= set(EXTRA_SCHEMAS_ALLOWED), f"schemas without facts: {sorted(extra - set(EXTRA_SCHEMAS_ALLOWED))}"
    assert not set(EXTRA_SCHEMAS_ALLOWED) & set(FACT_MESSAGES), "allow-list names a schema the facts cover"


def test_every_schema_file_is_compiled_into_a_message_class() -> None:
    assert set(MESSAGES) == {p.stem for p in SCHEMA_DIR.glob("*.json")}


def test_apis_facts_match_our_request_response_pairs() -> None:
    apis = _facts()["apis"]
    def versions(cls: Any) -> str:
        newer = VERSIONS_NEWER_THAN_FACTS.get(cls.name)
        return newer[0] if newer else str(cls.valid_versions)

    ours = {
        spec.name: {
            "apiKey": key,
            "request": (spec.request_class.name, versions(spec.request_class),
                        str(spec.request_class.flexible_versions)),
            "response": (spec.response_class.name, versions(spec.response_class),
                         str(spec.response_class.flexible_versions)),
        }
        for key, spec in API_SPECS.items() if spec.request_class.name not in EXTRA_SCHEMAS_ALLOWED
    }
    expected = {
        name: {
            "apiKey": api["apiKey"],
            "request": (api["request"]["message"], api["request"]["validVersions"],
                        api["request"]["flexibleVersions"]),
            "response": (api["response"]["message"], api["response"]["validVersions"],
                         api["response"]["flexibleVersions"]),
        }
        for name, api in apis.items()
    }
    assert ours == expected


@pytest.mark.parametrize("section", ["request", "response"])
def test_apis_deprecated_and_unstable_versions_match_our_schemas(section: str) -> None:
    for name, api in _facts()["apis"].items():
        ours = _normalised(_our_schema(api[section]["message"]))
        assert ours.get("deprecatedVersions") == api[section].get("deprecatedVersions"), f"{name} {section}"
        # The apis summary records latestVersionUnstable only when it is true.
        assert bool(ours.get("latestVersionUnstable")) == bool(api[section].get("latestVersionUnstable")), name


def test_record_types_match_the_versions_of_our_coordinator_record_schemas() -> None:
    for record in _facts()["recordTypes"]:
        for role in ("key", "value"):
            cls = MESSAGES[record[role]]
            assert cls.kind == "data"
            assert str(cls.valid_versions) == record[f"{role}Versions"], record
