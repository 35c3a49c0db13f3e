"""Users and their SASL credentials, and the file that keeps them.

No password is stored. Per user and mechanism the file holds what the server needs to check one:
for SCRAM-SHA-256/512 the salt, iteration count, StoredKey and ServerKey of RFC 5802 (as Kafka
keeps SCRAM credentials); for PLAIN a salted PBKDF2-HMAC-SHA-512 hash of the password. The file
is JSON, written atomically (and mode 0600) by `groupcoord users`; the server re-reads it when
its modification time changes, so users added to a running server can log in at once.

    {"version": 1, "users": {"alice": {
        "SCRAM-SHA-512": {"salt": "<base64>", "iterations": 4096, "stored_key": "<base64>",
                          "server_key": "<base64>"},
        "PLAIN": {"salt": "<base64>", "iterations": 4096, "hash": "<base64>"}}}}
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger()

FILE_VERSION = 1
CREDENTIALS_FILE_NAME = "credentials"
PLAIN = "PLAIN"
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}  # mechanism -> hashlib name
MECHANISMS = (PLAIN, *SCRAM_HASHES)
MIN_ITERATIONS = 4096  # Kafka's minimum for SCRAM, and RFC 7677's recommendation
SALT_BYTES = 32
PLAIN_HASH = "sha512"


def credentials_path(config: Mapping[str, Any]) -> Path:
    """`sasl.credentials.file`, or `<log.dirs>/credentials` when that is empty."""
    return Path(config["sasl.credentials.file"] or Path(config["log.dirs"]) / CREDENTIALS_FILE_NAME)


class CredentialsError(ValueError):
    """The credentials file cannot be read or says something malformed."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """RFC 5802's server-side record: enough to verify a client proof, not to impersonate a client."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


@dataclass(frozen=True, slots=True)
class PasswordHash:
    """A salted PBKDF2 hash of a password, checked for SASL/PLAIN."""

    salt: bytes
    iterations: int
    hash: bytes


@dataclass(frozen=True, slots=True)
class User:
    name: str
    scram: dict[str, ScramCredential] = field(default_factory=dict)  # by mechanism name
    plain: PasswordHash | None = None

    @property
    def mechanisms(self) -> tuple[str, ...]:
        return tuple(m for m in MECHANISMS if (m == PLAIN and self.plain is not None) or m in self.scram)


# ---- deriving and checking

def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802 Hi(): PBKDF2-HMAC over the UTF-8 password (no SASLprep, as Kafka and its clients)."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def scram_credential(mechanism: str, password: str, salt: bytes | None = None,
                     iterations: int = MIN_ITERATIONS) -> ScramCredential:
    hash_name = SCRAM_HASHES[mechanism]
    _ensure_iterations(iterations)
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    salted = salted_password(hash_name, password, salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    server_key = hmac.digest(salted, b"Server Key", hash_name)
    return ScramCredential(salt, iterations, hashlib.new(hash_name, client_key).digest(), server_key)


def plain_credential(password: str, salt: bytes | None = None, iterations: int = MIN_ITERATIONS) -> PasswordHash:
    _ensure_iterations(iterations)
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    return PasswordHash(salt, iterations, salted_password(PLAIN_HASH, password, salt, iterations))


_DUMMY_HASH = PasswordHash(b"\x00" * SALT_BYTES, MIN_ITERATIONS, b"\x00" * 64)


def verify_plain(credential: PasswordHash | None, password: str) -> bool:
    """Whether `password` matches. With no credential (unknown user) the same work is done, so that
    timing does not tell which user names exist."""
    target = credential or _DUMMY_HASH
    computed = salted_password(PLAIN_HASH, password, target.salt, target.iterations)
    return hmac.compare_digest(computed, target.hash) and credential is not None


def make_user(name: str, password: str, mechanisms: tuple[str, ...] = MECHANISMS,
              iterations: int = MIN_ITERATIONS) -> User:
    ensure_user_name(name)
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown or not mechanisms:
        raise CredentialsError(f"mechanisms must be among {', '.join(MECHANISMS)}, got {', '.join(mechanisms)}")
    if not password:
        raise CredentialsError("the password must not be empty")  # Kafka's PLAIN refuses empty passwords
    scram = {m: scram_credential(m, password, iterations=iterations) for m in mechanisms if m in SCRAM_HASHES}
    plain = plain_credential(password, iterations=iterations) if PLAIN in mechanisms else None
    return User(name, scram, plain)


def ensure_user_name(name: str) -> None:
    if not name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise CredentialsError(f"a user name must be non-empty printable text, got {name!r}")


def _ensure_iterations(iterations: int) -> None:
    if iterations < MIN_ITERATIONS:
        raise CredentialsError(f"iterations must be at least {MIN_ITERATIONS}, got {iterations}")


# ---- the file

@dataclass(frozen=True, slots=True)
class Credentials:
    users: dict[str, User] = field(default_factory=dict)

    def get(self, name: str) -> User | None:
        return self.users.get(name)


def dumps(credentials: Credentials) -> str:
    users = {}
    for name in sorted(credentials.users):
        user = credentials.users[name]
        entry: dict[str, dict[str, object]] = {}
        for mechanism, c in sorted(user.scram.items()):
            entry[mechanism] = {"salt": _b64(c.salt), "iterations": c.iterations,
                                "stored_key": _b64(c.stored_key), "server_key": _b64(c.server_key)}
        if user.plain is not None:
            entry[PLAIN] = {"salt": _b64(user.plain.salt), "iterations": user.plain.iterations,
                            "hash": _b64(user.plain.hash)}
        users[name] = entry
    return json.dumps({"version": FILE_VERSION, "users": users}, indent=2) + "\n"


def loads(text: str) -> Credentials:
    try:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("version") != FILE_VERSION:
            raise CredentialsError(f"expected a JSON object with \"version\": {FILE_VERSION}")
        users: dict[str, User] = {}
        for name, entry in document.get("users", {}).items():
            scram = {}
            plain = None
            for mechanism, c in entry.items():
                if mechanism in SCRAM_HASHES:
                    scram[mechanism] = ScramCredential(_unb64(c["salt"]), _iterations(c), _unb64(c["stored_key"]),
                                                       _unb64(c["server_key"]))
                elif mechanism == PLAIN:
                    plain = PasswordHash(_unb64(c["salt"]), _iterations(c), _unb64(c["hash"]))
                else:
                    raise CredentialsError(f"user {name!r}: unknown mechanism {mechanism!r}")
            users[name] = User(name, scram, plain)
    except CredentialsError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CredentialsError(f"malformed credentials: {exc!r}") from None
    return Credentials(users)


def read_credentials(path: Path) -> Credentials:
    """The file's users; none when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Credentials()
    except OSError as exc:
        raise CredentialsError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return loads(text)
    except CredentialsError as exc:
        raise CredentialsError(f"{path}: {exc}") from None


def write_credentials(path: Path, credentials: Credentials) -> None:
    """Replace the file atomically: a reader (the server) sees the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(credentials))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Serialise read-modify-write cycles of `groupcoord users` (two adds at once would lose one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


class CredentialStore:
    """The server's view of the file, re-read when it changes (checked at each SASL handshake)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._credentials = Credentials()
        self.current()

    def current(self) -> Credentials:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            try:
                self._credentials = read_credentials(self.path)
            except CredentialsError as exc:  # keep serving the users we knew rather than nobody
                log.warning("credentials_unreadable", path=str(self.path), error=str(exc))
            else:
                log.info("credentials_loaded", path=str(self.path), users=len(self._credentials.users))
            self._stamp = stamp
        return self._credentials

    def user(self, name: str) -> User | None:
        return self.current().get(name)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _iterations(entry: dict[str, object]) -> int:
    iterations = entry["iterations"]
    if not isinstance(iterations, int) or iterations < MIN_ITERATIONS:
        raise CredentialsError(f"iterations must be an integer >= {MIN_ITERATIONS}, got {iterations!r}")
    return iterations
