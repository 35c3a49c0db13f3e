"""The SASL server mechanisms as pure state machines: PLAIN and SCRAM-SHA-256/512."""

from __future__ import annotations

import base64

import pytest

from coordinator.security.credentials import User, make_user, plain_credential, scram_credential
from coordinator.security.sasl import (
    PlainServer,
    SaslAuthenticationError,
    ScramServer,
    decode_sasl_name,
    encode_sasl_name,
)
from tests.security.scram_client import ScramClient

ALICE = make_user("alice", "alice-secret")
USERS = {"alice": ALICE}


def lookup(name: str) -> User | None:
    return USERS.get(name)


# ---- SCRAM: RFC 7677's test vector, exactly

RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC7677_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def rfc7677_server() -> ScramServer:
    user = User("user", {"SCRAM-SHA-256": scram_credential("SCRAM-SHA-256", "pencil", RFC7677_SALT, 4096)})
    return ScramServer("SCRAM-SHA-256", {"user": user}.get, nonce_factory=lambda: RFC7677_SERVER_NONCE)


def test_scram_sha_256_answers_rfc_7677_test_vector_byte_for_byte():
    server = rfc7677_server()

    server_first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert server_first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    server_final = server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                   b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


def test_scram_sha_256_rfc_7677_exchange_with_a_wrong_proof_fails():
    server = rfc7677_server()
    server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(SaslAuthenticationError, match="invalid credentials with SASL mechanism SCRAM-SHA-256"):
        server.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                        b"p=AHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert not server.complete


# ---- SCRAM round trips

@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_with_the_right_password_authenticates_and_checks_the_server(mechanism):
    server = ScramServer(mechanism, lookup)
    client = ScramClient(mechanism, "alice", "alice-secret")

    server_first = server.evaluate(client.first())
    assert server_first.startswith(f"r={client.nonce}".encode())  # the server nonce is appended
    assert len(server_first.split(b",")[0]) > len(f"r={client.nonce}")
    assert client.verify(server.evaluate(client.final(server_first)))
    assert server.complete and server.username == "alice"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_wrong_password_fails_at_the_proof(mechanism):
    server = ScramServer(mechanism, lookup)
    client = ScramClient(mechanism, "alice", "wrong")
    server_first = server.evaluate(client.first())
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server.evaluate(client.final(server_first))
    assert not server.complete


def test_scram_unknown_user_gets_a_plausible_challenge_and_fails_like_a_wrong_password():
    server = ScramServer("SCRAM-SHA-512", lookup)
    client = ScramClient("SCRAM-SHA-512", "mallory", "anything")
    server_first = server.evaluate(client.first())
    fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
    assert len(base64.b64decode(fields["s"])) == 32 and fields["i"] == "4096"
    with pytest.raises(SaslAuthenticationError) as failure:
        server.evaluate(client.final(server_first))
    assert "mallory" not in str(failure.value)


def test_scram_unknown_user_salt_is_stable_so_it_cannot_be_told_from_a_real_one():
    first = ScramServer("SCRAM-SHA-512", lookup).evaluate(ScramClient("SCRAM-SHA-512", "mallory", "x").first())
    again = ScramServer("SCRAM-SHA-512", lookup).evaluate(ScramClient("SCRAM-SHA-512", "mallory", "x").first())
    assert first.split(b",")[1] == again.split(b",")[1]


def test_scram_client_final_must_carry_exactly_the_combined_nonce():
    server = ScramServer("SCRAM-SHA-256", lookup, nonce_factory=lambda: "SERVERNONCE")
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    # The client's own nonce without the server's part, as a replay of another exchange would carry.
    with pytest.raises(SaslAuthenticationError, match="nonce"):
        server.evaluate(client.final(server_first, nonce_override=client.nonce))


def test_scram_client_final_repeating_the_client_nonce_in_front_is_accepted_as_kafka_does():
    # librdkafka 2.0.2 (Debian's kcat) sends client nonce + combined nonce; Kafka's endsWith check let it in.
    server = ScramServer("SCRAM-SHA-256", lookup)
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    combined = server_first.split(b",")[0][2:].decode()
    assert client.verify(server.evaluate(client.final(server_first, nonce_override=client.nonce + combined)))


@pytest.mark.parametrize("prefix", ["x", "fyko+d2lbbFgONRv9qkxdawLx"])
def test_scram_client_final_with_any_other_prefix_before_the_nonce_fails(prefix):
    server = ScramServer("SCRAM-SHA-256", lookup)
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    combined = server_first.split(b",")[0][2:].decode()
    with pytest.raises(SaslAuthenticationError, match="nonce"):
        server.evaluate(client.final(server_first, nonce_override=prefix + combined))


def test_scram_channel_binding_is_refused():
    with pytest.raises(SaslAuthenticationError, match="channel binding"):
        ScramServer("SCRAM-SHA-256", lookup).evaluate(b"p=tls-unique,,n=alice,r=abc")
    with pytest.raises(SaslAuthenticationError, match="channel binding"):
        ScramServer("SCRAM-SHA-256", lookup).evaluate(b"y,,n=alice,r=abc")


def test_scram_client_final_with_another_channel_binding_than_announced_fails():
    server = ScramServer("SCRAM-SHA-256", lookup)
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    final = client.final(server_first).replace(b"c=biws", b"c=eSws")  # base64("y,,")
    with pytest.raises(SaslAuthenticationError, match="channel binding"):
        server.evaluate(final)


def test_scram_authorization_id_equal_to_the_user_is_accepted_and_another_refused():
    server = ScramServer("SCRAM-SHA-256", lookup)
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret", gs2_header="n,a=alice,")
    assert client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        ScramServer("SCRAM-SHA-256", lookup).evaluate(b"n,a=bob,n=alice,r=abc")


@pytest.mark.parametrize("message", [b"", b"n,,", b"n,,n=alice", b"n,,r=abc,n=alice", b"n,,n=alice,r=a,b",
                                     b"n,,m=ext,n=alice,r=abc", b"\xff\xfe", b"n,,n=alice,r=abc,tokenauth=true"])
def test_scram_malformed_or_unsupported_client_first_fails(message):
    with pytest.raises(SaslAuthenticationError):
        ScramServer("SCRAM-SHA-512", lookup).evaluate(message)


def test_scram_after_a_failure_every_message_fails():
    server = ScramServer("SCRAM-SHA-512", lookup)
    client = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"garbage")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(client.first())


def test_scram_user_without_that_mechanism_cannot_use_it():
    only_256 = make_user("carol", "carol-secret", mechanisms=("SCRAM-SHA-256",))
    server = ScramServer("SCRAM-SHA-512", {"carol": only_256}.get)
    client = ScramClient("SCRAM-SHA-512", "carol", "carol-secret")
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(client.final(server.evaluate(client.first())))


def test_sasl_names_escape_comma_and_equals():
    assert encode_sasl_name("a,b=c") == "a=2Cb=3Dc"
    assert decode_sasl_name("a=2Cb=3Dc") == "a,b=c"
    odd = make_user("a,b=c", "pw")
    server = ScramServer("SCRAM-SHA-256", {"a,b=c": odd}.get)
    client = ScramClient("SCRAM-SHA-256", "a,b=c", "pw")
    assert client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.username == "a,b=c"


# ---- PLAIN

def test_plain_right_password_authenticates():
    server = PlainServer(lookup)
    assert server.evaluate(b"\x00alice\x00alice-secret") == b""
    assert server.complete and server.username == "alice"


@pytest.mark.parametrize("token, reason", [
    (b"\x00alice\x00wrong", "Invalid username or password"),
    (b"\x00mallory\x00alice-secret", "Invalid username or password"),
    (b"\x00\x00alice-secret", "username not specified"),
    (b"\x00alice\x00", "password not specified"),
    (b"alice\x00alice-secret", "expected 3 tokens, got 2"),
    (b"bob\x00alice\x00alice-secret", "authorization id"),
])
def test_plain_failures_say_why_without_naming_secrets(token, reason):
    server = PlainServer(lookup)
    with pytest.raises(SaslAuthenticationError, match=reason):
        server.evaluate(token)
    assert not server.complete


def test_plain_user_without_plain_credential_cannot_use_plain():
    scram_only = make_user("dave", "dave-secret", mechanisms=("SCRAM-SHA-512",))
    with pytest.raises(SaslAuthenticationError):
        PlainServer({"dave": scram_only}.get).evaluate(b"\x00dave\x00dave-secret")


def test_plain_credential_is_a_salted_hash_not_the_password():
    one, two = plain_credential("same"), plain_credential("same")
    assert one.salt != two.salt and one.hash != two.hash
    assert b"same" not in one.hash
