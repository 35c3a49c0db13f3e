"""TLS settings to SSLContext, and a client certificate's subject to Kafka's principal name."""

from __future__ import annotations

import ssl

import pytest

from coordinator.config import load_config
from coordinator.security.tls import TlsConfigError, rfc2253_name, server_ssl_context
from tests.security.certificates import KEY_PASSWORD, make_certificates


def test_subject_is_written_in_rfc_2253_order_last_rdn_first():
    subject = ((("countryName", "US"),), (("organizationName", "example"),), (("commonName", "alice"),))
    assert rfc2253_name(subject) == "CN=alice,O=example,C=US"


def test_special_characters_are_escaped_and_multi_valued_rdns_joined_with_plus():
    subject = ((("organizationName", "Acme, Inc."),), (("commonName", "a+b"), ("userId", "7")))
    assert rfc2253_name(subject) == "CN=a\\+b+UID=7,O=Acme\\, Inc."
    assert rfc2253_name(((("commonName", " x "),),)) == "CN=\\ x\\ "
    assert rfc2253_name(((("commonName", "#x"),),)) == "CN=\\#x"


def test_email_address_is_written_as_java_does_by_oid_and_der_hex():
    subject = ((("emailAddress", "a@b"),), (("commonName", "alice"),))
    assert rfc2253_name(subject) == "CN=alice,1.2.840.113549.1.9.1=#1603614062"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):  # type: ignore[no-untyped-def]
    return make_certificates(tmp_path_factory.mktemp("certs"))


def config(**settings: str):  # type: ignore[no-untyped-def]
    return load_config(overrides=[f"{k.replace('_', '.')}={v}" for k, v in settings.items()], environ={})


def test_context_requires_client_certificates_as_configured(certs):
    required = server_ssl_context(config(ssl_keystore_location=certs.server_keystore,
                                         ssl_truststore_location=certs.ca, ssl_client_auth="required"))
    assert required.verify_mode == ssl.CERT_REQUIRED
    assert required.minimum_version == ssl.TLSVersion.TLSv1_2
    assert server_ssl_context(config(ssl_keystore_location=certs.server_keystore)).verify_mode == ssl.CERT_NONE


def test_encrypted_key_needs_its_password(certs):
    with pytest.raises(TlsConfigError, match="cannot load the certificate and key"):
        server_ssl_context(config(ssl_keystore_location=certs.server_keystore_encrypted, ssl_key_password="nope"))
    server_ssl_context(config(ssl_keystore_location=certs.server_keystore_encrypted, ssl_key_password=KEY_PASSWORD))


def test_missing_keystore_or_truststore_is_a_start_error(certs, tmp_path):
    with pytest.raises(TlsConfigError, match=r"ssl\.keystore\.location"):
        server_ssl_context(config())
    with pytest.raises(TlsConfigError, match=r"needs ssl\.truststore\.location"):
        server_ssl_context(config(ssl_keystore_location=certs.server_keystore, ssl_client_auth="requested"))
    with pytest.raises(TlsConfigError, match="cannot load"):
        server_ssl_context(config(ssl_keystore_location=tmp_path / "missing.pem"))
