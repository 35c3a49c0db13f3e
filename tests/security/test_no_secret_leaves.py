"""Acceptance: a server started with every secret-bearing setting set never shows a secret.

Every secret is a distinct marker string: the TLS key's password (ssl.key.password, the key really
encrypted with it), and a SASL user's password (our own credential, sent by clients logging in, right
and wrong). The test then gathers every channel the server and the `groupcoord` command write to:
the server's stdout/stderr (at DEBUG), DescribeConfigs answers for every resource type through
confluent-kafka, kafka-python, Kafka's kafka-configs.sh (the Java AdminClient) and the raw protocol
(every version, with synonyms and documentation), /metrics, and the CLI's output (including its
configuration errors and a start that fails on a wrong key password), and looks for the markers.
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpType

from coordinator.cli import main as groupcoord
from protocol.api_keys import ApiKey
from protocol.messages import DescribeConfigsRequest
from tests.clients.support import java_command
from tests.conftest import free_port, server_command
from tests.security.certificates import make_certificates
from tests.security.secure_server import open_wire, start_secure_server
from tests.server.conftest import KafkaWire

KEY_MARKER = "Kz9-key-password-MARKER-31f7"
USER_MARKER = "Uq4-user-password-MARKER-8c2e"
WRONG_MARKER = "Wx7-wrong-password-MARKER-55ad"
MARKERS = (KEY_MARKER, USER_MARKER, WRONG_MARKER)
BROKER, TOPIC, GROUP = 4, 2, 32
PASSWORD_TYPE = 9
Resource = DescribeConfigsRequest.DescribeConfigsResource


def _encrypt_key(certs, directory: Path) -> Path:
    openssl = shutil.which("openssl") or "/usr/bin/openssl"
    subprocess.run([openssl, "pkey", "-in", str(directory / "server.key"), "-aes256", "-passout",
                    f"pass:{KEY_MARKER}", "-out", str(directory / "marker.key")], check=True, capture_output=True)
    keystore = directory / "marker-keystore.pem"
    keystore.write_bytes((directory / "server.pem").read_bytes() + (directory / "marker.key").read_bytes())
    return keystore


def _cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        groupcoord(list(argv))
    return out.getvalue() + err.getvalue()


def _raw_describe(wire: KafkaWire) -> str:
    seen = []
    resources = [Resource(BROKER, "0", None), Resource(BROKER, "", None), Resource(TOPIC, "leak-check", None),
                 Resource(GROUP, "leak-group", None)]
    for version in range(0, 5):
        response = wire.request(ApiKey.DESCRIBE_CONFIGS, version, DescribeConfigsRequest(
            resources=resources, include_synonyms=version >= 1, include_documentation=version >= 3))
        seen.append(repr(response))
        [broker] = [r for r in response.results if r.resource_type == BROKER and r.resource_name == "0"]
        [password] = [c for c in broker.configs if c.name == "ssl.key.password"]
        assert password.value is None and password.is_sensitive
        if version >= 1:
            assert password.synonyms == [] or all(s.value is None for s in password.synonyms)
        if version >= 3:
            assert password.config_type == PASSWORD_TYPE
    return "\n".join(seen)


@pytest.mark.clients
def test_no_secret_in_any_answer_log_metric_or_cli_output(server_factory, tmp_path):
    certs = make_certificates(tmp_path / "certs")
    keystore = _encrypt_key(certs, tmp_path / "certs")
    http_port = free_port()
    secure = start_secure_server(server_factory, certs, tmp_path, f"ssl.keystore.location={keystore}",
                                 f"ssl.key.password={KEY_MARKER}", f"http.listener=127.0.0.1:{http_port}",
                                 "log.level=DEBUG", users={"alice": USER_MARKER})
    seen: list[str] = []
    quiet = logging.getLogger("leak-check")

    # Clients log in over every SASL listener, with the right password and a wrong one; TLS uses the key.
    for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        for password in (USER_MARKER, WRONG_MARKER):
            consumer = Consumer({"bootstrap.servers": secure.bootstrap(protocol), "security.protocol": protocol,
                                 "ssl.ca.location": str(certs.ca), "sasl.mechanisms": "SCRAM-SHA-256",
                                 "sasl.username": "alice", "sasl.password": password, "group.id": "leak-group",
                                 "logger": quiet})
            try:
                consumer.list_topics(timeout=10)
            except KafkaException:
                assert password == WRONG_MARKER
            finally:
                consumer.close()

    admin = AdminClient({"bootstrap.servers": secure.bootstrap("PLAINTEXT"), "logger": quiet})
    admin.create_topics([NewTopic("leak-check", 1, 1)])["leak-check"].result(20)
    for resource in (ConfigResource(ResourceType.BROKER, "0"), ConfigResource(ResourceType.TOPIC, "leak-check"),
                     ConfigResource(ResourceType.GROUP, "leak-group")):
        entries = admin.describe_configs([resource], request_timeout=20)[resource].result(20)
        seen.append(repr({name: (e.value, e.is_sensitive, e.synonyms) for name, e in entries.items()}))
    broker_resource = ConfigResource(ResourceType.BROKER, "0")
    password_entry = admin.describe_configs([broker_resource])[broker_resource].result(20)["ssl.key.password"]
    assert password_entry.value is None and password_entry.is_sensitive

    kafka_python = KafkaAdminClient(bootstrap_servers=secure.bootstrap("PLAINTEXT"))
    try:
        for answer in kafka_python.describe_configs([KpConfigResource(KpType.BROKER, "0"),
                                                     KpConfigResource(KpType.TOPIC, "leak-check")],
                                                    include_synonyms=True):
            seen.append(repr(answer))
    finally:
        kafka_python.close()

    wire = open_wire(secure, "PLAINTEXT")
    try:
        seen.append(_raw_describe(wire))
    finally:
        wire.close()

    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10) as page:
        seen.append(page.read().decode())

    # Kafka 4.4.0's kafka-configs.sh (the Java AdminClient) for each resource type.
    for entity in (["brokers", "--entity-name", "0", "--all"], ["topics", "--entity-name", "leak-check", "--all"],
                   ["groups", "--entity-name", "leak-group", "--all"]):
        done = subprocess.run(java_command("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                                           secure.bootstrap("PLAINTEXT"), "--describe", "--entity-type", *entity),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout + done.stderr
        seen.append(done.stdout + done.stderr)
    assert "ssl.key.password=null sensitive=true" in seen[-3]

    data_dir = str(secure.process.data_dir)
    seen.append(_cli("acls", "--data-dir", data_dir, "--list"))
    users = _cli("users", "--override", f"log.dirs={data_dir}", "--override",
                 f"sasl.credentials.file={secure.credentials_file}", "--override", f"ssl.key.password={KEY_MARKER}",
                 "list")
    assert "alice" in users
    seen.append(users)
    seen.append(_cli("groups", "--bootstrap-server", secure.bootstrap("PLAINTEXT"), "--list"))
    # Configuration errors name the setting, never a secret's value: a bad neighbour, a typo'd separator.
    seen.append(_cli("serve", "--override", f"ssl.key.password={KEY_MARKER}", "--override", "num.partitions=x"))
    seen.append(_cli("serve", "--override", f"ssl.key.password:{KEY_MARKER}"))
    bad_file = tmp_path / "bad.properties"
    bad_file.write_text(f"ssl.key.password={KEY_MARKER}\\uZZZZ\n")
    seen.append(_cli("serve", "--config", str(bad_file)))

    # A start that fails on the key (a wrong password): the error and the exception logs name no secret.
    failed = subprocess.run([*server_command(), "serve", "--override", f"listeners=SSL://127.0.0.1:{free_port()}",
                             "--override", f"log.dirs={tmp_path / 'failed-start'}",
                             "--override", f"ssl.keystore.location={keystore}",
                             "--override", f"ssl.key.password={WRONG_MARKER}", "--log-level", "DEBUG"],
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert failed.returncode != 0 and "ssl.keystore.location" in failed.stderr
    seen.append(failed.stdout + failed.stderr)

    secure.process.stop()
    seen.append(secure.process.log_tail(limit=1 << 24))
    everything = "\n".join(seen)
    assert "ssl.key.password" in everything and "server_ready" in everything  # the channels were read
    assert "config_loaded" in everything and '"ssl.key.password": "[hidden]"' in everything
    for marker in MARKERS:
        assert marker not in everything, f"{marker} leaked:\n" + "\n".join(
            line for line in everything.splitlines() if marker in line)[:2000]
