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

#: Schema files of ours that have no counterpart in the facts, each with the reason it exists.
EXTRA_SCHEMAS_ALLOWED: dict[str, str] = {
    "ClassicGroupReasonKey": "groupcoord record type 30000: last KIP-800 reason of a classic group (not Kafka's)",
    "ClassicGroupReasonValue": "groupcoord record type 30000: last KIP-800 reason of a classic group (not Kafka's)",
    "IncrementalAlterConfigsRequest": "API 44, not in the facts snapshot; from apache/kafka "
                                      "clients/src/main/resources/common/message (v0-1, flexible 1+)",
    "IncrementalAlterConfigsResponse": "API 44, not in the facts snapshot; from apache/kafka "
                                       "clients/src/main/resources/common/message (v0-1, flexible 1+)",
    "AddPartitionsToTxnRequest": "API 24, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "AddPartitionsToTxnResponse": "API 24, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "AddOffsetsToTxnRequest": "API 25, v0-4, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "AddOffsetsToTxnResponse": "API 25, v0-4, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "EndTxnRequest": "API 26, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "EndTxnResponse": "API 26, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "TxnOffsetCommitRequest": "API 28, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "TxnOffsetCommitResponse": "API 28, v0-5, flexible 3+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "DescribeProducersRequest": "API 61, v0, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "DescribeProducersResponse": "API 61, v0, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "DescribeTransactionsRequest": "API 65, v0, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "DescribeTransactionsResponse": "API 65, v0, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "ListTransactionsRequest": "API 66, v0-2, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "ListTransactionsResponse": "API 66, v0-2, flexible 0+; not in the facts snapshot: the schema of Kafka 4.x (as bundled with kafka-python 3.0.12)",
    "TxnPendingOffsetsKey": "groupcoord record type 30001 of __transaction_state: an open transaction's offsets",
    "TxnPendingOffsetsValue": "groupcoord record type 30001 of __transaction_state: an open transaction's offsets",
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
    schema = json.loads((SCHEMA_DIR / f"{name}.json").read_text())
    newer = FIELDS_NEWER_THAN_FACTS.get(name, {})
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in newer]
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
    ours = {
        spec.name: {
            "apiKey": key,
            "request": (spec.request_class.name, str(spec.request_class.valid_versions),
                        str(spec.request_class.flexible_versions)),
            "response": (spec.response_class.name, str(spec.response_class.valid_versions),
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
