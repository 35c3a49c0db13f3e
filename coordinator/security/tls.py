"""TLS for SSL and SASL_SSL listeners: the server's SSLContext, and who a client certificate names.

Settings as Kafka's (PEM variant, KIP-651): `ssl.keystore.location` holds the certificate chain
and private key (`ssl.key.password` if the key is encrypted), `ssl.truststore.location` the CA
certificates client certificates must chain to, `ssl.client.auth` none/requested/required.
As in Kafka since KIP-684, client authentication applies to SSL listeners; on SASL_SSL the
client is authenticated by SASL and no certificate is asked for.

An SSL client's principal is Kafka's default one: "User:" + the certificate subject's
distinguished name in RFC 2253 form (what Java's X500Principal.getName() returns), or
User:ANONYMOUS without a certificate.
"""

from __future__ import annotations

import ssl
from typing import Any

from coordinator.config import Config

ANONYMOUS = "User:ANONYMOUS"
_VERIFY_MODES = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsConfigError(OSError):
    """The TLS settings cannot make a working context (reported at start, as Kafka does)."""


def server_ssl_context(config: Config, client_auth: str | None = None) -> ssl.SSLContext:
    """The context of a TLS listener; `client_auth` overrides `ssl.client.auth` (SASL_SSL: "none")."""
    keystore = config["ssl.keystore.location"]
    if not keystore:
        raise TlsConfigError("SSL and SASL_SSL listeners need ssl.keystore.location (a PEM file with the "
                             "certificate chain and private key)")
    client_auth = config["ssl.client.auth"] if client_auth is None else client_auth
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2  # Kafka's ssl.enabled.protocols: TLSv1.2,TLSv1.3
    try:
        context.load_cert_chain(keystore, keystore, config["ssl.key.password"] or None)
    except (OSError, ssl.SSLError) as exc:
        raise TlsConfigError(f"ssl.keystore.location {keystore}: cannot load the certificate and key: {exc}") from None
    truststore = config["ssl.truststore.location"]
    if truststore:
        try:
            context.load_verify_locations(cafile=truststore)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(f"ssl.truststore.location {truststore}: cannot load CA certificates: {exc}") from None
    elif client_auth != "none":
        raise TlsConfigError(f"ssl.client.auth={client_auth} needs ssl.truststore.location (the CA certificates "
                             "that client certificates must chain to)")
    context.verify_mode = _VERIFY_MODES[client_auth]
    return context


# ---- principal from a client certificate

# OpenSSL's long names (as getpeercert() gives them) -> the keywords Java's RFC 2253 output uses.
_RFC2253_KEYWORDS = {
    "commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
    "domainComponent": "DC", "userId": "UID",
}
_OTHER_KEYWORDS = {  # Java prints other attributes by OID
    "emailAddress": "1.2.840.113549.1.9.1", "serialNumber": "2.5.4.5", "title": "2.5.4.12",
    "surname": "2.5.4.4", "givenName": "2.5.4.42", "initials": "2.5.4.43", "generationQualifier": "2.5.4.44",
    "pseudonym": "2.5.4.65", "dnQualifier": "2.5.4.46", "postalCode": "2.5.4.17", "businessCategory": "2.5.4.15",
}


def rfc2253_name(subject: tuple[tuple[tuple[str, str], ...], ...]) -> str:
    """A subject as `ssl.SSLSocket.getpeercert()` gives it (RDNs in certificate order), written as
    RFC 2253 does: last RDN first, attributes of one RDN joined by '+', special characters escaped."""
    return ",".join("+".join(_attribute(name, value) for name, value in rdn) for rdn in reversed(subject))


def _attribute(name: str, value: str) -> str:
    keyword = _RFC2253_KEYWORDS.get(name)
    if keyword is not None:
        return f"{keyword}={_escape(value)}"
    if name == "emailAddress":  # Java: OID=#<DER hex>; an emailAddress is always an IA5String (tag 0x16)
        return f"{_OTHER_KEYWORDS[name]}=#{_der_ia5(value).hex()}"
    # Other attributes: Java's form needs the DER string type, which getpeercert() does not keep.
    return f"{_OTHER_KEYWORDS.get(name, name)}={_escape(value)}"


def _der_ia5(value: str) -> bytes:
    data = value.encode("ascii", "replace")
    size = len(data)
    if size < 0x80:
        return bytes([0x16, size]) + data
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([0x16, 0x80 | len(length)]) + length + data


def _escape(value: str) -> str:
    out = []
    for i, char in enumerate(value):
        if char in ',+"\\<>;' or (char == "#" and i == 0) or (char == " " and i in (0, len(value) - 1)):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def principal_of_peer(transport: Any) -> str:
    """`User:<subject DN>` of a verified client certificate on this TLS transport, else User:ANONYMOUS."""
    ssl_object = transport.get_extra_info("ssl_object")
    certificate = ssl_object.getpeercert() if ssl_object is not None else None
    if not certificate or not certificate.get("subject"):
        return ANONYMOUS
    return "User:" + rfc2253_name(certificate["subject"])
