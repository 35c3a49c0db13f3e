"""ApiVersions over the wire: every served version, the KIP-511 fallback, software-name checks."""

from __future__ import annotations

import struct

import pytest

from coordinator.server.app import load_api_modules
from coordinator.server.registry import HANDLERS
from protocol.api_keys import ApiKey
from protocol.client import decode_response
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsRequest


def served_versions() -> dict[int, tuple[int, int]]:
    load_api_modules()
    return {h.api_key: (h.min_version, h.max_version) for h in HANDLERS.values()}


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_lists_exactly_the_registered_handlers(wire, version):
    request = ApiVersionsRequest(client_software_name="server-tests", client_software_version="1.0")
    response = wire.request(ApiKey.API_VERSIONS, version, request)
    assert response.error_code == ErrorCode.NONE
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised == served_versions()
    assert advertised[ApiKey.API_VERSIONS] == (0, 4)
    assert [k.api_key for k in response.api_keys] == sorted(advertised)


def test_bootstrap_apis_are_served_with_their_version_ranges(wire):
    response = wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("server-tests", "1.0"))
    advertised = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert advertised[ApiKey.METADATA] == (0, 12)
    assert advertised[ApiKey.FIND_COORDINATOR] == (0, 6)
    assert advertised[ApiKey.CREATE_TOPICS] == (2, 7)
    assert advertised[ApiKey.DESCRIBE_CLUSTER] == (0, 1)
    assert advertised[ApiKey.DESCRIBE_CONFIGS] == (0, 4)


def test_api_versions_newer_than_served_gets_a_v0_unsupported_version_answer(wire):
    # A v5 body we cannot parse; the answer is a v0 response (header v0) naming what we serve.
    correlation_id = 77
    client_id = b"future-client"
    payload = struct.pack(">hhih", ApiKey.API_VERSIONS, 5, correlation_id, len(client_id)) + client_id
    wire.send_raw(struct.pack(">i", len(payload) + 3) + payload + b"\x00\x01\x02")
    got, response = decode_response(ApiKey.API_VERSIONS, 0, wire.read_frame())
    assert got == correlation_id
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == served_versions()
    # The connection stays usable: the client retries with a version we serve.
    assert wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("c", "1")).error_code == ErrorCode.NONE


@pytest.mark.parametrize("name, version", [
    ("", "1.0"),
    ("bad name", "1.0"),
    ("-leading-dash", "1.0"),
    ("librdkafka", "2.4.0-"),
    ("apache-kafka-java", "3.7.0!"),
])
def test_api_versions_v3_rejects_malformed_client_software(wire, name, version):
    response = wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(name, version))
    assert response.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("name, version", [("librdkafka", "2.4.0"), ("apache-kafka-java", "3.7.0-SNAPSHOT"),
                                           ("a", "1"), ("kafka.python", "3.0.12")])
def test_api_versions_v3_accepts_well_formed_client_software(wire, name, version):
    response = wire.request(ApiKey.API_VERSIONS, 4, ApiVersionsRequest(name, version))
    assert response.error_code == ErrorCode.NONE
    # transaction.version 2 (KIP-890 part 2) supported and finalized, with an epoch the Java client takes
    assert response.finalized_features_epoch == 0
    assert [(f.name, f.min_version, f.max_version) for f in response.supported_features] == [
        ("transaction.version", 0, 2)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in response.finalized_features] == [
        ("transaction.version", 2, 2)]


def test_api_versions_v2_does_not_check_client_software(wire):
    # v0-2 have no software fields at all; nothing to validate.
    assert wire.request(ApiKey.API_VERSIONS, 2, ApiVersionsRequest()).error_code == ErrorCode.NONE
