"""TLS and SASL on the wire, against the real server: Kafka's pre-authentication sequence (ApiVersions,
SaslHandshake v0/v1, SaslAuthenticate), its failures and closes, the pre-authentication frame cap,
client certificates, per-listener advertised addresses and credentials changed while running."""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

import pytest

from coordinator.security.users_command import add_parser as add_users_parser
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from tests.security.certificates import CertificateSet, make_certificates
from tests.security.scram_client import ScramClient
from tests.security.secure_server import (
    SecureServer,
    client_ssl_context,
    connection_refused_or_closed,
    open_wire,
    start_secure_server,
)
from tests.server.conftest import KafkaWire

ENABLED = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificateSet:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def secure(server_factory, certs, tmp_path) -> SecureServer:
    return start_secure_server(server_factory, certs, tmp_path)


def handshake(wire: KafkaWire, mechanism: str, version: int = 1):  # type: ignore[no-untyped-def]
    return wire.request(ApiKey.SASL_HANDSHAKE, version, SaslHandshakeRequest(mechanism=mechanism))


def authenticate(wire: KafkaWire, token: bytes, version: int = 2):  # type: ignore[no-untyped-def]
    return wire.request(ApiKey.SASL_AUTHENTICATE, version, SaslAuthenticateRequest(auth_bytes=token))


def scram_login(wire: KafkaWire, mechanism: str, user: str, password: str) -> None:
    assert handshake(wire, mechanism).error_code == ErrorCode.NONE
    client = ScramClient(mechanism, user, password)
    first = authenticate(wire, client.first())
    assert first.error_code == ErrorCode.NONE
    final = authenticate(wire, client.final(first.auth_bytes))
    assert final.error_code == ErrorCode.NONE, final.error_message
    assert client.verify(final.auth_bytes)


def metadata_broker(wire: KafkaWire) -> tuple[str, int]:
    [broker] = wire.request(ApiKey.METADATA, 12, MetadataRequest(topics=[])).brokers
    return broker.host, broker.port


# ---- the happy paths

def test_plain_over_sasl_authenticate_then_requests_are_served_with_this_listeners_address(secure):
    wire = open_wire(secure, "SASL_PLAINTEXT")
    versions = wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t",
                                                                      client_software_version="1"))
    served = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}
    assert served[ApiKey.SASL_HANDSHAKE] == (0, 1) and served[ApiKey.SASL_AUTHENTICATE] == (0, 2)
    response = handshake(wire, "PLAIN")
    assert (response.error_code, response.mechanisms) == (ErrorCode.NONE, ENABLED)
    done = authenticate(wire, b"\x00alice\x00alice-secret")
    assert (done.error_code, done.auth_bytes, done.session_lifetime_ms) == (ErrorCode.NONE, b"", 0)
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["SASL_PLAINTEXT"])
    # After authentication a handshake is out of place, as Kafka answers it (no re-authentication).
    assert handshake(wire, "PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_over_sasl_ssl_authenticates_and_metadata_names_the_sasl_ssl_port(secure, mechanism):
    wire = open_wire(secure, "SASL_SSL")
    scram_login(wire, mechanism, "bob", "bob-secret")
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["SASL_SSL"])


def bare_token(token: bytes) -> bytes:
    return struct.pack(">i", len(token)) + token


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_legacy_v0_handshake_exchanges_bare_tokens(secure, mechanism):
    """SaslHandshake v0 (KIP-43): the tokens follow as size-prefixed frames with no Kafka header."""
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert handshake(wire, mechanism, version=0).error_code == ErrorCode.NONE
    if mechanism == "PLAIN":
        wire.send_raw(bare_token(b"\x00alice\x00alice-se"))
        assert connection_refused_or_closed(wire)  # wrong password: v0 can only close
        wire = open_wire(secure, "SASL_PLAINTEXT")
        assert handshake(wire, mechanism, version=0).error_code == ErrorCode.NONE
        wire.send_raw(bare_token(b"\x00alice\x00alice-secret"))
        assert wire.read_frame() == b""  # Kafka answers PLAIN's empty challenge with an empty frame
    else:
        client = ScramClient(mechanism, "alice", "alice-secret")
        wire.send_raw(bare_token(client.first()))
        wire.send_raw(bare_token(client.final(wire.read_frame())))
        assert client.verify(wire.read_frame())
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["SASL_PLAINTEXT"])


# ---- failures, as Kafka fails them

@pytest.mark.parametrize("mechanism, first_token", [
    ("PLAIN", b"\x00alice\x00wrong"),
    ("SCRAM-SHA-512", None),
])
def test_wrong_password_is_sasl_authentication_failed_then_closed(secure, mechanism, first_token):
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert handshake(wire, mechanism).error_code == ErrorCode.NONE
    if first_token is None:
        client = ScramClient(mechanism, "alice", "wrong")
        failed = authenticate(wire, client.final(authenticate(wire, client.first()).auth_bytes))
    else:
        failed = authenticate(wire, first_token)
    assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED == 58
    assert failed.error_message.startswith("Authentication failed")
    assert "wrong" not in failed.error_message
    assert wire.closed_by_server()


def test_unknown_mechanism_is_unsupported_with_the_enabled_list_then_closed(secure):
    wire = open_wire(secure, "SASL_PLAINTEXT")
    response = handshake(wire, "GSSAPI")
    assert (response.error_code, response.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ENABLED)
    assert wire.closed_by_server()


def test_enabled_mechanisms_follow_the_setting(server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path, "sasl.enabled.mechanisms=SCRAM-SHA-512")
    wire = open_wire(secure, "SASL_SSL")
    response = handshake(wire, "PLAIN")
    assert (response.error_code, response.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_request_before_the_handshake_closes_the_connection_unanswered(secure, protocol):
    wire = open_wire(secure, protocol)
    wire.send(ApiKey.METADATA, 12, MetadataRequest(topics=[]))
    assert connection_refused_or_closed(wire)


def test_request_other_than_sasl_authenticate_mid_exchange_gets_illegal_sasl_state_then_close(secure):
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert handshake(wire, "PLAIN").error_code == ErrorCode.NONE
    response = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0))
    assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert wire.closed_by_server()


def test_second_api_versions_before_the_handshake_closes_as_kafka_does(secure):
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert wire.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE
    wire.send(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
    assert connection_refused_or_closed(wire)


def test_frames_before_authentication_are_capped_at_sasl_server_max_receive_size(server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path, "sasl.server.max.receive.size=1000")
    padded = encode_request(ApiKey.API_VERSIONS, 0, 1, "t", ApiVersionsRequest())
    padded = struct.pack(">i", len(padded) - 4 + 2000) + padded[4:] + bytes(2000)  # trailing bytes are ignored
    wire = open_wire(secure, "SASL_PLAINTEXT")
    wire.send_raw(padded)
    assert connection_refused_or_closed(wire)
    # Once authenticated, socket.request.max.bytes is the limit again.
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert handshake(wire, "PLAIN").error_code == ErrorCode.NONE
    assert authenticate(wire, b"\x00alice\x00alice-secret").error_code == ErrorCode.NONE
    wire.send_raw(padded)
    assert wire.receive(ApiKey.API_VERSIONS, 0)[1].error_code == ErrorCode.NONE


def test_sasl_apis_on_a_plaintext_listener_are_illegal_sasl_state(secure):
    wire = open_wire(secure, "PLAINTEXT")
    assert handshake(wire, "PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert authenticate(wire, b"\x00alice\x00alice-secret").error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["PLAINTEXT"])


# ---- credentials change while the server runs

def run_users(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord")
    add_users_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["users", *argv])
    return args.run(args)


def test_users_added_and_removed_with_the_command_take_effect_on_the_running_server(secure):
    file = str(secure.credentials_file)
    wire = open_wire(secure, "SASL_SSL")
    assert handshake(wire, "SCRAM-SHA-256").error_code == ErrorCode.NONE
    client = ScramClient("SCRAM-SHA-256", "carol", "carol-secret")
    assert authenticate(wire, client.final(authenticate(wire, client.first()).auth_bytes)).error_code == 58

    assert run_users("--file", file, "add", "carol", "--password", "carol-secret") == 0
    scram_login(open_wire(secure, "SASL_SSL"), "SCRAM-SHA-256", "carol", "carol-secret")

    assert run_users("--file", file, "remove", "alice") == 0
    wire = open_wire(secure, "SASL_PLAINTEXT")
    assert handshake(wire, "PLAIN").error_code == ErrorCode.NONE
    assert authenticate(wire, b"\x00alice\x00alice-secret").error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


# ---- TLS and client certificates

def test_ssl_client_auth_required_refuses_a_client_without_a_certificate_or_with_an_untrusted_one(
        server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path, "ssl.client.auth=required", "log.level=DEBUG")
    for context in (client_ssl_context(certs), client_ssl_context(certs, with_certificate=True, rogue=True)):
        try:
            wire = open_wire(secure, "SSL", context)
            wire.send(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
        except OSError:  # TLS 1.2 fails in the handshake; TLS 1.3 at the first read
            continue
        assert connection_refused_or_closed(wire)
    wire = open_wire(secure, "SSL", client_ssl_context(certs, with_certificate=True))
    assert wire.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(client_software_name="t",
                                                                  client_software_version="1")).error_code == 0
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["SSL"])
    wire.close()
    # Kafka's default principal for a certificate: its subject DN in RFC 2253 form.
    assert f'"principal": "{certs.client_principal}"' in secure.process.log_tail(200_000)


def test_ssl_client_auth_requested_lets_a_client_without_a_certificate_in(server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path, "ssl.client.auth=requested")
    wire = open_wire(secure, "SSL", client_ssl_context(certs))
    assert metadata_broker(wire) == ("127.0.0.1", secure.ports["SSL"])


def test_encrypted_keystore_key_opens_with_ssl_key_password(server_factory, certs, tmp_path):
    from tests.security.certificates import KEY_PASSWORD

    secure = start_secure_server(server_factory, certs, tmp_path,
                                 f"ssl.keystore.location={certs.server_keystore_encrypted}",
                                 f"ssl.key.password={KEY_PASSWORD}")
    assert metadata_broker(open_wire(secure, "SSL")) == ("127.0.0.1", secure.ports["SSL"])


@pytest.mark.parametrize("overrides, message", [
    (("ssl.keystore.location=",), "ssl.keystore.location"),
    (("sasl.enabled.mechanisms=PLAIN,GSSAPI",), "GSSAPI not supported"),
    (("ssl.truststore.location=", "ssl.client.auth=required"), "needs ssl.truststore.location"),
])
def test_security_settings_that_cannot_work_stop_the_start(server_factory, certs, tmp_path, overrides, message):
    with pytest.raises(RuntimeError, match="exited with code 1") as failure:
        start_secure_server(server_factory, certs, tmp_path, *overrides)
    assert message in str(failure.value)


# ---- what clients are told to connect to

def test_each_listener_advertises_its_own_address_and_advertised_listeners_match_by_name(
        server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path,
                                 "advertised.listeners=PLAINTEXT://kafka.example:19092,"
                                 "SASL_SSL://secure.example:19094")
    plain = open_wire(secure, "PLAINTEXT")
    assert metadata_broker(plain) == ("kafka.example", 19092)
    tls = open_wire(secure, "SSL")  # not advertised: its own address
    assert metadata_broker(tls) == ("127.0.0.1", secure.ports["SSL"])
    sasl_ssl = open_wire(secure, "SASL_SSL")
    scram_login(sasl_ssl, "SCRAM-SHA-512", "alice", "alice-secret")
    assert metadata_broker(sasl_ssl) == ("secure.example", 19094)
    coordinator = sasl_ssl.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0,
                                                                                      coordinator_keys=["g"]))
    assert [(c.host, c.port) for c in coordinator.coordinators] == [("secure.example", 19094)]
    cluster = tls.request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    assert [(b.host, b.port) for b in cluster.brokers] == [("127.0.0.1", secure.ports["SSL"])]


def test_credentials_file_holds_no_password(secure):
    text = Path(secure.credentials_file).read_text()
    assert "alice-secret" not in text and "bob-secret" not in text
