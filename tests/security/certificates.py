"""Throw-away certificates for TLS tests, made with the openssl CLI in a temporary directory.

A test CA signs a server certificate (SAN 127.0.0.1 and localhost) and a client certificate
(subject O=example, CN=alice); a second, untrusted CA signs another client certificate. The
server keystore is one PEM file with the certificate and key, as `ssl.keystore.location` takes it.
Nothing here is committed: every run makes new keys.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

KEY_PASSWORD = "keystore-secret"


@dataclass(frozen=True)
class CertificateSet:
    ca: Path  # the CA bundle clients and the server trust
    server_keystore: Path  # server certificate + unencrypted key
    server_keystore_encrypted: Path  # the same, key encrypted with KEY_PASSWORD
    client_cert: Path  # O=example, CN=alice, signed by `ca`
    client_key: Path
    rogue_client_cert: Path  # signed by a CA the server does not trust
    rogue_client_key: Path

    client_principal = "User:CN=alice,O=example"


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl") or "/usr/bin/openssl"
    result = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        pytest.fail(f"openssl {' '.join(args)} failed:\n{result.stderr}")


def _new_key(name: str, cwd: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", name, cwd=cwd)


def _ca(name: str, subject: str, cwd: Path) -> None:
    _new_key(f"{name}.key", cwd)
    _openssl("req", "-x509", "-new", "-key", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", subject,
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=cwd)


def _signed(name: str, subject: str, ca: str, extensions: str, cwd: Path) -> None:
    _new_key(f"{name}.key", cwd)
    _openssl("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=cwd)


def make_certificates(directory: Path) -> CertificateSet:
    directory.mkdir(parents=True, exist_ok=True)
    _ca("ca", "/CN=groupcoord test CA", directory)
    _ca("rogue-ca", "/CN=someone else's CA", directory)
    _signed("server", "/CN=localhost", "ca",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", directory)
    _signed("client", "/O=example/CN=alice", "ca", "extendedKeyUsage=clientAuth\n", directory)
    _signed("rogue-client", "/O=example/CN=alice", "rogue-ca", "extendedKeyUsage=clientAuth\n", directory)
    keystore = directory / "server-keystore.pem"
    keystore.write_bytes((directory / "server.pem").read_bytes() + (directory / "server.key").read_bytes())
    _openssl("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}", "-out",
             "server-encrypted.key", cwd=directory)
    encrypted = directory / "server-keystore-encrypted.pem"
    encrypted.write_bytes((directory / "server.pem").read_bytes() + (directory / "server-encrypted.key").read_bytes())
    return CertificateSet(directory / "ca.pem", keystore, encrypted, directory / "client.pem",
                            directory / "client.key", directory / "rogue-client.pem", directory / "rogue-client.key")
