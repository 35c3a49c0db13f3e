"""Every schema of ours against the one Apache Kafka ships, in the jars of the release the tests run
(tests/clients/java/pom.xml, built by `make java`): kafka-clients holds the request, response and header
schemas, the coordinator jars the record schemas.

For each version both serve, the wire layout must be Kafka's: the same fields in the same order, with the same
types, nullability, tags and defaults, and the same flexible versions. We may serve fewer new versions than
Kafka, and we keep serving the old versions Kafka 4.0 removed (KIP-896) for older clients: those are held by
test_schema_facts.py against the facts snapshot, which still has them. Schemas Kafka has no file for (our own
record types) are skipped by name. This complements test_schema_facts.py, which holds the first-wave schemas
against the facts snapshot in ../shared and cannot see schemas added after it.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.clients.support import JAVA_DIR

SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"
JARS_WITH_SCHEMAS = ("kafka-clients-", "kafka-group-coordinator-", "kafka-transaction-coordinator-",
                     "kafka-share-coordinator-", "kafka-coordinator-common-")

#: Our schemas with no file of that name in Kafka, each with the reason.
OURS_ONLY: dict[str, str] = {
    "ClassicGroupReasonKey": "groupcoord record type 30000 (the last KIP-800 reason of a classic group)",
    "ClassicGroupReasonValue": "groupcoord record type 30000 (the last KIP-800 reason of a classic group)",
}


#: Differences from Kafka 4.4's record schemas, by schema and field path, each with the reason. A field
#: listed here that Kafka has and we lack is left out of Kafka's side (all are tagged: our decoder skips
#: them when it reads a log Kafka wrote); one both have is compared without its default.
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    "ConsumerGroupMetadataValue": {
        "MetadataHash": "KIP-1101 (Kafka 4.1) tagged int64: the subscribed topics' metadata hash that replaces "
                        "ConsumerGroupPartitionMetadata records; not written yet (growing topics: issue 20)",
    },
    "ConsumerGroupCurrentMemberAssignmentValue": {
        "AssignedPartitions.AssignmentEpochs": "Kafka 4.4 tagged []int32: per-partition assignment epochs used to "
                                               "fence zombie commits; not written yet",
        "PartitionsPendingRevocation.AssignmentEpochs": "as AssignedPartitions.AssignmentEpochs",
    },
    "OffsetCommitValue": {
        "topicId": "Kafka 4.4 tagged uuid in v4: the committed partition's topic id; not written yet",
    },
    "TransactionLogValue": {
        "NextProducerEpoch": "KIP-890 tagged int16 (tag 3): the epoch that goes with NextProducerId when a "
                             "transaction-version-2 epoch overflows; that path is not implemented yet (issue 19)",
    },
    "ConsumerGroupMemberMetadataValue": {
        "ClassicMemberMetadata": "our schema says default null (the core tests `is None`); Kafka's has no default, "
                                 "so Kafka writes the tag with a null marker where we leave it out; both decode",
    },
}


#: Fields Kafka renamed after we wrote ours, by Kafka's path; the wire is the same.
RENAMED: dict[str, str] = {
    "GenerationIdOrMemberEpoch": "GenerationId",  # TxnOffsetCommitRequest, Kafka 4.x (KIP-848 member epochs)
}


def _strip_comments(text: str) -> str:
    """Kafka's schema files are JSON with // comments; drop those outside strings."""
    out: list[str] = []
    in_string = escaped = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _kafka_schemas() -> dict[str, dict[str, Any]]:
    classpath = JAVA_DIR / "target" / "classpath.txt"
    if not classpath.exists():
        pytest.fail("the Java test build is missing; run `make java` (make test does)")
    schemas: dict[str, dict[str, Any]] = {}
    for jar in classpath.read_text().strip().split(":"):
        if not Path(jar).name.startswith(JARS_WITH_SCHEMAS):
            continue
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    schema = json.loads(_strip_comments(archive.read(name).decode()))
                    schemas[schema["name"]] = schema
    return schemas


def _in(spec: str | None, version: int) -> bool:
    """Whether a Kafka version range ("0+", "1-3", "2", "none") holds ``version``."""
    if spec is None or spec == "none":
        return False
    if spec.endswith("+"):
        return version >= int(spec[:-1])
    low, _, high = spec.partition("-")
    return int(low) <= version <= int(high or low)


def _range(spec: str) -> tuple[int, int]:
    low, _, high = spec.partition("-")
    return int(low), int(high or low)


def _layout(fields: list[dict[str, Any]], structs: dict[str, list[dict[str, Any]]], version: int,
            known: dict[str, str], ours: set[str] | None = None, prefix: str = "") -> list[Any]:
    """The wire facts of ``fields`` at ``version``: what the codec must read and write. ``known`` names the
    field paths of KNOWN_DIFFERENCES; on Kafka's side, ``ours`` holds our schema's field paths."""
    layout = []
    for field in fields:
        path = prefix + field["name"]
        # Kafka leaves "versions" out of some tagged fields: they exist in their tagged versions.
        present = _in(field.get("versions", field.get("taggedVersions")), version)
        if not present or (ours is not None and path in known and path not in ours):
            continue
        type_name = field["type"]
        element = type_name[2:] if type_name.startswith("[]") else type_name
        nested = field.get("fields") or structs.get(element)
        default = None if path in known else field.get("default")
        layout.append((
            RENAMED.get(path, field["name"]), type_name, _in(field.get("nullableVersions"), version),
            field.get("tag") if _in(field.get("taggedVersions"), version) else None,
            None if default is None else str(default).lower(),
            _layout(nested, structs, version, known, ours, path + ".") if nested else None,
        ))
    # On the wire the untagged fields come in schema order and the tagged ones after them by tag, whatever
    # their place in the file.
    return [f for f in layout if f[3] is None] + sorted((f for f in layout if f[3] is not None), key=lambda f: f[3])


def _paths(fields: list[dict[str, Any]], structs: dict[str, list[dict[str, Any]]], prefix: str = "") -> set[str]:
    paths = set()
    for field in fields:
        paths.add(prefix + field["name"])
        element = field["type"].removeprefix("[]")
        nested = field.get("fields") or structs.get(element)
        if nested:
            paths |= _paths(nested, structs, prefix + field["name"] + ".")
    return paths


def _common_structs(schema: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {struct["name"]: struct["fields"] for struct in schema.get("commonStructs", [])}


OUR_SCHEMAS = sorted(path.stem for path in SCHEMAS_DIR.glob("*.json"))


@pytest.fixture(scope="module")
def kafka_schemas() -> dict[str, dict[str, Any]]:
    return _kafka_schemas()


@pytest.mark.parametrize("name", OUR_SCHEMAS)
def test_schema_has_kafkas_wire_layout_at_every_version_we_serve(name: str, kafka_schemas) -> None:
    if name in OURS_ONLY:
        assert name not in kafka_schemas, f"Kafka now ships {name}: compare it instead of listing it as ours"
        return
    assert name in kafka_schemas, f"Kafka {name}.json not found in the jars of the Java build"
    ours = json.loads((SCHEMAS_DIR / f"{name}.json").read_text())
    theirs = kafka_schemas[name]
    if "apiKey" in ours:
        assert ours["apiKey"] == theirs.get("apiKey")
    known = KNOWN_DIFFERENCES.get(name, {})
    our_paths = _paths(ours["fields"], _common_structs(ours))
    assert set(known) <= our_paths | _paths(theirs["fields"], _common_structs(theirs)), "stale KNOWN_DIFFERENCES"
    if name.endswith("Key") and theirs.get("type") == "coordinator-key":
        # A record key's version is its record type in the classic serde (ours); Kafka 4.x names the
        # type apiKey and versions the key from 0 (CoordinatorRecordSerde reads both the same way). Our
        # OffsetCommitKey covers types 0 and 1, which Kafka splits into LegacyOffsetCommitKey and OffsetCommitKey.
        record_type = theirs["apiKey"]
        assert _in(ours["validVersions"], record_type), f"{name}: record type {record_type} not among ours"
        assert _layout(ours["fields"], _common_structs(ours), record_type, known) == \
            _layout(theirs["fields"], _common_structs(theirs), 0, known, our_paths)
        return
    low, high = _range(ours["validVersions"])
    kafka_low, kafka_high = _range(theirs["validVersions"])
    assert high <= kafka_high, f"{name}: we serve up to v{high}, Kafka up to v{kafka_high}"
    assert max(low, kafka_low) <= high, f"{name}: no version in common with Kafka's {kafka_low}-{kafka_high}"
    for version in range(max(low, kafka_low), high + 1):
        assert _in(ours.get("flexibleVersions"), version) == _in(theirs.get("flexibleVersions"), version), \
            f"{name} v{version}: flexible differs"
        assert _layout(ours["fields"], _common_structs(ours), version, known) == \
            _layout(theirs["fields"], _common_structs(theirs), version, known, our_paths), \
            f"{name} v{version}: layout differs"
