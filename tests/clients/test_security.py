"""TLS and SASL with real clients: confluent-kafka (librdkafka), kafka-python and kcat connect over
SSL (with a client certificate the server requires), SASL_PLAINTEXT with PLAIN and SASL_SSL with
SCRAM-SHA-512; produce, consume in a group and commit. Wrong passwords and mechanisms the server
does not enable fail the way each client reports them; ssl.client.auth=required keeps out a client
without a certificate."""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import errors as kafka_errors
from kafka.structs import TopicPartition as KafkaPythonTopicPartition

from tests.security.certificates import CertificateSet, make_certificates
from tests.security.secure_server import SecureServer, start_secure_server

from .support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

MESSAGES = 20
# (listener, SASL mechanism or None): the three acceptance combinations
SECURITY_CASES = [("SSL", None), ("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")]
CASE_IDS = ["ssl-client-cert", "sasl-plain", "sasl-ssl-scram-sha-512"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertificateSet:
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def secure(server_factory, certs, tmp_path) -> SecureServer:
    # Client certificates required on the SSL listener: the SSL cases present one signed by the CA.
    return start_secure_server(server_factory, certs, tmp_path, "ssl.client.auth=required",
                               "group.initial.rebalance.delay.ms=0")


# ---- confluent-kafka

def confluent_settings(secure: SecureServer, protocol: str, mechanism: str | None, password: str = "alice-secret",
                       certificate: bool = True) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": secure.bootstrap(protocol),
        "security.protocol": protocol,
        "socket.timeout.ms": 10_000,
        "socket.connection.setup.timeout.ms": 5_000,
        "logger": logging.getLogger("librdkafka"),
    }
    if protocol in ("SSL", "SASL_SSL"):
        settings["ssl.ca.location"] = str(secure.certs.ca)
    if protocol == "SSL" and certificate:
        settings["ssl.certificate.location"] = str(secure.certs.client_cert)
        settings["ssl.key.location"] = str(secure.certs.client_key)
    if mechanism is not None:
        settings.update({"sasl.mechanisms": mechanism, "sasl.username": "alice", "sasl.password": password})
    return settings


def confluent_round_trip(settings: dict[str, Any], topic: str, group: str) -> None:
    producer = Producer(settings)
    for i in range(MESSAGES):
        producer.produce(topic, key=str(i).encode(), value=f"message-{i}".encode())
    assert producer.flush(20) == 0
    del producer

    consumer = Consumer({**settings, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < MESSAGES and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
        assert values == [f"message-{i}".encode() for i in range(MESSAGES)]
        consumer.commit(asynchronous=False)
        [committed] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed.offset == MESSAGES
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol, mechanism", SECURITY_CASES, ids=CASE_IDS)
def test_confluent_kafka_produces_consumes_in_a_group_and_commits(secure, topic_name, protocol, mechanism):
    confluent_round_trip(confluent_settings(secure, protocol, mechanism), topic_name, f"{topic_name}-group")


def confluent_errors(settings: dict[str, Any], wait_s: float = 15) -> list[KafkaError]:
    """The errors librdkafka reports (error_cb) while trying to reach the cluster."""
    errors: list[KafkaError] = []
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + wait_s
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    del producer
    return errors


@pytest.mark.parametrize("protocol, mechanism", [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_confluent_kafka_with_a_wrong_password_reports_the_authentication_failure(secure, protocol, mechanism):
    errors = confluent_errors(confluent_settings(secure, protocol, mechanism, password="wrong"))
    assert errors, "librdkafka reported no error"
    # librdkafka maps the broker's SASL_AUTHENTICATION_FAILED (58) to its local _AUTHENTICATION
    # and carries the broker's message.
    assert errors[0].code() == KafkaError._AUTHENTICATION, errors[0]
    assert "Authentication failed" in errors[0].str(), errors[0]


def test_confluent_kafka_with_a_mechanism_not_enabled_reports_the_enabled_ones(server_factory, certs, tmp_path):
    secure = start_secure_server(server_factory, certs, tmp_path, "sasl.enabled.mechanisms=SCRAM-SHA-512")
    errors = confluent_errors(confluent_settings(secure, "SASL_PLAINTEXT", "PLAIN"))
    assert errors, "librdkafka reported no error"
    text = errors[0].str()
    assert "Unsupported SASL mechanism" in text and "SCRAM-SHA-512" in text, text


def test_confluent_kafka_without_a_client_certificate_is_refused_when_required(secure):
    errors = confluent_errors(confluent_settings(secure, "SSL", None, certificate=False))
    assert errors, "librdkafka reported no error"
    assert errors[0].code() in (KafkaError._TRANSPORT, KafkaError._SSL, KafkaError._ALL_BROKERS_DOWN), errors[0]


# ---- kafka-python

def kafka_python_settings(secure: SecureServer, protocol: str, mechanism: str | None,
                          password: str = "alice-secret", certificate: bool = True) -> dict[str, Any]:
    settings: dict[str, Any] = {"bootstrap_servers": secure.bootstrap(protocol), "security_protocol": protocol,
                                "request_timeout_ms": 10_000}
    if protocol in ("SSL", "SASL_SSL"):
        settings["ssl_cafile"] = str(secure.certs.ca)
    if protocol == "SSL" and certificate:
        settings["ssl_certfile"] = str(secure.certs.client_cert)
        settings["ssl_keyfile"] = str(secure.certs.client_key)
    if mechanism is not None:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": password})
    return settings


@pytest.mark.parametrize("protocol, mechanism", SECURITY_CASES, ids=CASE_IDS)
def test_kafka_python_produces_consumes_in_a_group_and_commits(secure, topic_name, protocol, mechanism):
    settings = kafka_python_settings(secure, protocol, mechanism)
    producer = KafkaProducer(**settings, max_block_ms=15_000)
    try:
        for i in range(MESSAGES):
            producer.send(topic_name, key=str(i).encode(), value=f"message-{i}".encode())
        producer.flush(timeout=20)
    finally:
        producer.close(timeout=5)

    consumer = KafkaConsumer(topic_name, **settings, group_id=f"{topic_name}-group", auto_offset_reset="earliest",
                             enable_auto_commit=False)
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < MESSAGES and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
        assert values == [f"message-{i}".encode() for i in range(MESSAGES)]
        consumer.commit()
        assert consumer.committed(KafkaPythonTopicPartition(topic_name, 0)) == MESSAGES
    finally:
        consumer.close()


def kafka_python_connection_errors(settings: dict[str, Any], caplog: pytest.LogCaptureFixture) -> list[Exception]:
    """The exceptions kafka-python logs for failed connections: its bootstrap retries them and ends
    with a timeout, so the authentication error itself is in its log."""
    caplog.set_level(logging.ERROR, logger="kafka")
    with pytest.raises(kafka_errors.KafkaError):  # in 3.0.12: KafkaTimeoutError("Unable to bootstrap ...")
        KafkaProducer(**settings, bootstrap_timeout_ms=4_000)
    return [arg for record in caplog.records if record.name.startswith("kafka")
            for arg in (record.args if isinstance(record.args, tuple) else ()) if isinstance(arg, Exception)]


@pytest.mark.parametrize("protocol, mechanism", [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")])
def test_kafka_python_with_a_wrong_password_gets_sasl_authentication_failed(secure, caplog, protocol, mechanism):
    errors = kafka_python_connection_errors(kafka_python_settings(secure, protocol, mechanism, password="wrong"),
                                            caplog)
    failures = [e for e in errors if isinstance(e, kafka_errors.SaslAuthenticationFailedError)]
    assert failures, errors
    assert failures[0].errno == 58
    assert "Authentication failed" in str(failures[0])


def test_kafka_python_with_a_mechanism_not_enabled_gets_unsupported_sasl_mechanism(server_factory, certs, tmp_path,
                                                                                   caplog):
    secure = start_secure_server(server_factory, certs, tmp_path, "sasl.enabled.mechanisms=SCRAM-SHA-512")
    errors = kafka_python_connection_errors(kafka_python_settings(secure, "SASL_SSL", "PLAIN"), caplog)
    assert any(isinstance(e, kafka_errors.UnsupportedSaslMechanismError) and e.errno == 33 for e in errors), errors


def test_kafka_python_without_a_client_certificate_is_refused_when_required(secure, caplog):
    errors = kafka_python_connection_errors(kafka_python_settings(secure, "SSL", None, certificate=False), caplog)
    assert errors  # the TLS alert (certificate required) or the close that follows it


# ---- kcat

def run_kcat(secure: SecureServer, *args: str, stdin: str | None = None, password: str = "alice-secret",
             timeout: float = 30) -> subprocess.CompletedProcess:
    settings = ["-b", secure.bootstrap("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
                "-X", f"ssl.ca.location={secure.certs.ca}", "-X", "sasl.mechanisms=SCRAM-SHA-512",
                "-X", "sasl.username=alice", "-X", f"sasl.password={password}"]
    return subprocess.run([require_tool("kcat"), *settings, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)


def test_kcat_over_sasl_ssl_lists_metadata_produces_and_consumes_in_a_group(secure, topic_name):
    listing = run_kcat(secure, "-L", "-m", "10")
    assert listing.returncode == 0, listing.stderr
    assert f"broker 0 at 127.0.0.1:{secure.ports['SASL_SSL']}" in listing.stdout

    produced = run_kcat(secure, "-P", "-t", topic_name, stdin="one\ntwo\nthree\n")
    assert produced.returncode == 0, produced.stderr
    consumed = run_kcat(secure, "-C", "-t", topic_name, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["one", "two", "three"]
    # A balanced consumer group (-G) reads them too and commits (auto-commit on close).
    grouped = run_kcat(secure, "-d", "cgrp", "-G", f"{topic_name}-group", "-c", "3", "-q",
                       "-X", "auto.offset.reset=earliest", topic_name)
    assert grouped.returncode == 0, grouped.stderr
    assert grouped.stdout.split() == ["one", "two", "three"]


def test_kcat_with_a_wrong_password_fails_with_the_authentication_error(secure):
    listing = run_kcat(secure, "-L", "-m", "5", password="wrong")
    assert listing.returncode != 0
    assert "Authentication failed" in listing.stderr, listing.stderr


def test_no_key_material_outside_the_test_directory(certs):
    # Keys live in pytest's temporary directory, never in the checkout.
    repo = Path(__file__).resolve().parents[2]
    assert repo not in certs.ca.resolve().parents


# ---- principals, as the ACL authorizer sees them

def produce_one(settings: dict[str, Any], topic: str) -> KafkaError | None:
    """Produce one message; the delivery error, if any."""
    outcome: list[KafkaError | None] = []
    producer = Producer({**settings, "message.timeout.ms": 10_000})
    producer.produce(topic, value=b"v", on_delivery=lambda err, msg: outcome.append(err))
    producer.flush(15)
    del producer
    assert outcome, "no delivery report"
    return outcome[0]


def test_authenticated_principals_are_what_acls_name(server_factory, certs, tmp_path, topic_name):
    from coordinator.cli import main as groupcoord

    secure = start_secure_server(server_factory, certs, tmp_path, "ssl.client.auth=required",
                                 "authorizer.class.name=acl")
    for principal in ("User:alice", certs.client_principal):  # a SASL user; a certificate's subject DN
        assert groupcoord(["acls", "--data-dir", str(secure.process.data_dir), "--add", "--allow-principal",
                           principal, "--producer", "--topic", topic_name]) == 0
    assert produce_one(confluent_settings(secure, "SASL_SSL", "SCRAM-SHA-512"), topic_name) is None
    assert produce_one(confluent_settings(secure, "SSL", None), topic_name) is None
    bob = {**confluent_settings(secure, "SASL_PLAINTEXT", "PLAIN"), "sasl.username": "bob",
           "sasl.password": "bob-secret"}
    denied = produce_one(bob, topic_name)
    assert denied is not None and denied.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, denied
