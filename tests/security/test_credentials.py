"""The credentials file: what it stores (no passwords), atomic writes, the server's reload on change,
and `groupcoord users`."""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import stat
from pathlib import Path

import pytest

from coordinator.security.credentials import (
    MIN_ITERATIONS,
    Credentials,
    CredentialsError,
    CredentialStore,
    credentials_path,
    dumps,
    loads,
    make_user,
    read_credentials,
    salted_password,
    scram_credential,
    verify_plain,
    write_credentials,
)
from coordinator.security.users_command import add_parser


def test_scram_credential_holds_rfc_5802_keys_derived_from_the_password():
    salt = b"s" * 32
    credential = scram_credential("SCRAM-SHA-512", "pw", salt, 4096)
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 4096)
    assert credential.stored_key == hashlib.sha512(hmac.digest(salted, b"Client Key", "sha512")).digest()
    assert credential.server_key == hmac.digest(salted, b"Server Key", "sha512")
    assert salted_password("sha512", "pw", salt, 4096) == salted


def test_fewer_than_4096_iterations_are_refused():
    with pytest.raises(CredentialsError, match="at least 4096"):
        make_user("alice", "pw", iterations=1000)
    text = dumps(Credentials({"alice": make_user("alice", "pw")})).replace('"iterations": 4096', '"iterations": 10')
    with pytest.raises(CredentialsError, match="iterations"):
        loads(text)


def test_file_round_trips_and_holds_no_password(tmp_path):
    path = tmp_path / "credentials"
    users = {"alice": make_user("alice", "alice-secret"),
             "bob": make_user("bob", "bob-secret", mechanisms=("SCRAM-SHA-256",), iterations=8192)}
    write_credentials(path, Credentials(users))
    assert read_credentials(path) == Credentials(users)
    text = path.read_text()
    assert "secret" not in text
    assert json.loads(text)["version"] == 1
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["credentials"]  # no temporary file left behind


def test_plain_checks_against_the_stored_hash():
    user = make_user("alice", "alice-secret", mechanisms=("PLAIN",))
    assert verify_plain(user.plain, "alice-secret")
    assert not verify_plain(user.plain, "alice-secreT")
    assert not verify_plain(None, "alice-secret")


@pytest.mark.parametrize("text", ["", "[]", '{"version": 2, "users": {}}', '{"version": 1, "users": {"a": {"X": {}}}}',
                                  '{"version": 1, "users": {"a": {"PLAIN": {"salt": "!!", "iterations": 4096, '
                                  '"hash": ""}}}}'])
def test_malformed_files_are_refused_with_a_reason(text):
    with pytest.raises(CredentialsError):
        loads(text)


def test_missing_file_means_no_users(tmp_path):
    assert read_credentials(tmp_path / "nothing") == Credentials()


def test_store_rereads_the_file_when_it_changes_and_keeps_the_last_good_one_if_it_breaks(tmp_path):
    path = tmp_path / "credentials"
    store = CredentialStore(path)
    assert store.user("alice") is None
    write_credentials(path, Credentials({"alice": make_user("alice", "pw")}))
    assert store.user("alice") is not None
    path.write_text("{broken")
    assert store.user("alice") is not None  # a half-edited file does not lock everyone out
    write_credentials(path, Credentials({}))
    assert store.user("alice") is None


def test_credentials_path_defaults_to_the_data_directory():
    assert credentials_path({"sasl.credentials.file": "", "log.dirs": Path("/d")}) == Path("/d/credentials")
    assert credentials_path({"sasl.credentials.file": "/etc/c", "log.dirs": Path("/d")}) == Path("/etc/c")


# ---- groupcoord users

def users(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["users", *argv])
    return args.run(args)


def test_users_add_list_remove(tmp_path, capsys, monkeypatch):
    file = str(tmp_path / "credentials")
    assert users("--file", file, "add", "alice", "--password", "pw") == 0
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("bob-pw\n"))
    assert users("--file", file, "add", "bob", "--password-stdin", "--mechanism", "SCRAM-SHA-512",
                 "--iterations", "8192") == 0
    capsys.readouterr()
    assert users("--file", file, "list", "--output", "json") == 0
    assert json.loads(capsys.readouterr().out) == [
        {"user": "alice", "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]},
        {"user": "bob", "mechanisms": ["SCRAM-SHA-512"]}]
    stored = read_credentials(Path(file)).users["bob"].scram["SCRAM-SHA-512"]
    assert stored.iterations == 8192 and stored == scram_credential("SCRAM-SHA-512", "bob-pw", stored.salt, 8192)
    assert users("--file", file, "remove", "alice") == 0
    assert list(read_credentials(Path(file)).users) == ["bob"]
    assert users("--file", file, "remove", "alice") == 1
    assert "no user 'alice'" in capsys.readouterr().err


def test_users_finds_the_servers_file_through_the_server_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("GROUPCOORD_LOG_DIRS", str(tmp_path / "data"))
    assert users("add", "alice", "--password", "pw") == 0
    assert "alice" in read_credentials(tmp_path / "data" / "credentials").users
    assert users("--override", f"sasl.credentials.file={tmp_path / 'c'}", "add", "bob", "--password", "pw") == 0
    assert "bob" in read_credentials(tmp_path / "c").users


def test_users_refuses_empty_passwords_and_low_iterations(tmp_path):
    file = str(tmp_path / "credentials")
    assert users("--file", file, "add", "alice", "--password", "") == 1
    assert users("--file", file, "add", "alice", "--password", "pw", "--iterations", str(MIN_ITERATIONS - 1)) == 1
    assert not Path(file).exists()
