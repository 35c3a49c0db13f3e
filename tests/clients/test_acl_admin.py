"""ACLs managed over the wire, as kafka-acls.sh --bootstrap-server and every AdminClient do: CreateAcls,
DescribeAcls and DeleteAcls with confluent-kafka's and kafka-python's admin clients against the real
server. A change applies to a second client's very next request, `groupcoord acls` sees it (one
store), and an acknowledged change survives a SIGKILL.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka import errors as Errors
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KpResourceType

from coordinator.cli import main as groupcoord
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import OffsetFetchRequest
from tests.clients.support import java_command
from tests.server.conftest import KafkaWire

pytestmark = pytest.mark.clients

ME = "User:ANONYMOUS"  # every PLAINTEXT client
SECURED = ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:root"]
OPEN_UNTIL_ACLS = "allow.everyone.if.no.acl.found=true"
EVERYTHING = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)
_KP_EVERYTHING = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                          ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))


def _admin(server) -> AdminClient:
    return AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka.admin")})


def _binding(rtype, name, op, permission=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL,
             principal=ME, host="*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def _create(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings), request_timeout=20).values():
        assert future.result(20) is None


def _kafka_python_describe_fails(server, error: type[Exception]) -> None:
    kafka_python = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=20_000)
    try:
        with pytest.raises(error):
            kafka_python.describe_acls(_KP_EVERYTHING)
    finally:
        kafka_python.close()


def _fetch_offsets_error(wire, group: str) -> int:
    response = wire.request(ApiKey.OFFSET_FETCH, 8, OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]))
    return response.groups[0].error_code


@pytest.fixture
def second_client():
    """A raw connection of another client, closed at teardown."""
    opened: list[KafkaWire] = []

    def open_wire(server) -> KafkaWire:
        opened.append(KafkaWire(server.host, server.port, client_id="second-client"))
        return opened[-1]

    yield open_wire
    for wire in opened:
        wire.close()


def test_confluent_kafka_creates_describes_and_deletes_acls_and_a_second_client_feels_it_at_once(
        server_factory, second_client):
    server = server_factory(*SECURED, OPEN_UNTIL_ACLS)  # open until the first ACL
    admin = _admin(server)
    assert admin.describe_acls(EVERYTHING, request_timeout=20).result(20) == []
    other = second_client(server)
    assert _fetch_offsets_error(other, "billing") == ErrorCode.NONE  # no ACL on the group yet: open

    # A DENY for the second client on its group, and the ALTER/DESCRIBE on the cluster the admin needs later.
    deny = _binding(ResourceType.GROUP, "billing", AclOperation.ALL, AclPermissionType.DENY)
    prefixed = _binding(ResourceType.TOPIC, "orders.", AclOperation.READ, pattern=ResourcePatternType.PREFIXED)
    cluster = [_binding(ResourceType.BROKER, "kafka-cluster", op) for op in (AclOperation.ALTER, AclOperation.DESCRIBE)]
    _create(admin, deny, prefixed, *cluster)
    assert _fetch_offsets_error(other, "billing") == ErrorCode.GROUP_AUTHORIZATION_FAILED  # the very next request

    found = admin.describe_acls(EVERYTHING, request_timeout=20).result(20)
    assert sorted(map(str, found)) == sorted(map(str, [deny, prefixed, *cluster]))
    # MATCH: every binding that applies to the topic orders.eu (the prefixed one), and filters by each field.
    match = AclBindingFilter(ResourceType.TOPIC, "orders.eu", ResourcePatternType.MATCH, None, None,
                             AclOperation.ANY, AclPermissionType.ANY)
    assert admin.describe_acls(match).result(20) == [prefixed]
    denies = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, ME, "*", AclOperation.ANY,
                              AclPermissionType.DENY)
    assert admin.describe_acls(denies).result(20) == [deny]

    # `groupcoord acls --list` reads the same store.
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--list", "--group", "billing"]) == 0

    group_filter = AclBindingFilter(ResourceType.GROUP, None, ResourcePatternType.ANY, None, None,
                                    AclOperation.ANY, AclPermissionType.ANY)
    assert admin.delete_acls([group_filter], request_timeout=20)[group_filter].result(20) == [deny]
    assert _fetch_offsets_error(other, "billing") == ErrorCode.NONE  # back open, at once


def test_invalid_creations_are_refused_one_by_one_as_kafka_does(server_factory):
    server = server_factory(*SECURED, OPEN_UNTIL_ACLS)
    admin = _admin(server)
    good = _binding(ResourceType.TOPIC, "t", AclOperation.WRITE)
    bad_cluster = _binding(ResourceType.BROKER, "not-the-cluster", AclOperation.ALTER)
    futures = admin.create_acls([good, bad_cluster], request_timeout=20)
    assert futures[good].result(20) is None
    with pytest.raises(KafkaException) as refused:
        futures[bad_cluster].result(20)
    assert refused.value.args[0].code() == ErrorCode.INVALID_REQUEST
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in refused.value.args[0].str()
    assert admin.describe_acls(EVERYTHING).result(20) == [good]  # the valid creation applied, the bad one not


def test_without_cluster_alter_the_admin_is_refused_and_nothing_changes(server_factory):
    server = server_factory(*SECURED)
    admin = _admin(server)
    binding = _binding(ResourceType.TOPIC, "t", AclOperation.READ)
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding], request_timeout=20)[binding].result(20)
    assert refused.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # librdkafka (2.x) hands back an empty list for DescribeAcls' top-level error; kafka-python raises it.
    assert admin.describe_acls(EVERYTHING, request_timeout=20).result(20) == []
    _kafka_python_describe_fails(server, Errors.ClusterAuthorizationFailedError)
    assert not (server.data_dir / "acls.json").exists()


def test_without_an_authorizer_acl_calls_answer_security_disabled(server_factory):
    server = server_factory()
    admin = _admin(server)
    binding = _binding(ResourceType.TOPIC, "t", AclOperation.READ)
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding], request_timeout=20)[binding].result(20)
    assert refused.value.args[0].code() == ErrorCode.SECURITY_DISABLED
    _kafka_python_describe_fails(server, Errors.SecurityDisabledError)


def test_kafka_python_admin_manages_acls_and_they_survive_a_sigkill(server_factory):
    server = server_factory(*SECURED, OPEN_UNTIL_ACLS)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=20_000)
    try:
        acls = [ACL(ME, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(KpResourceType.GROUP, "billing", ACLResourcePatternType.LITERAL)),
                ACL("User:bob", "10.0.0.1", ACLOperation.WRITE, ACLPermissionType.DENY,
                    ResourcePattern(KpResourceType.TOPIC, "logs-", ACLResourcePatternType.PREFIXED))]
        created = admin.create_acls(acls)
        assert len(created["succeeded"]) == 2 and created["failed"] == []
        found, error = admin.describe_acls(_KP_EVERYTHING)
        assert {(a.principal, a.host, a.resource_pattern.resource_name) for a in found} == {
            (ME, "*", "billing"), ("User:bob", "10.0.0.1", "logs-")}
    finally:
        admin.close()

    os.killpg(server.proc.pid, signal.SIGKILL)  # acknowledged, so on disk
    server.proc.wait(10)
    server.stop()
    server.start()
    server.wait_ready()
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=20_000)
    try:
        found, _ = admin.describe_acls(_KP_EVERYTHING)
        assert len(found) == 2
        bob = ACLFilter("User:bob", None, ACLOperation.ANY, ACLPermissionType.ANY,
                        ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY))
        [(_, deleted, error)] = admin.delete_acls([bob])
        assert [a.principal for a in deleted] == ["User:bob"] and error is Errors.NoError
        found, _ = admin.describe_acls(_KP_EVERYTHING)
        assert [a.principal for a in found] == [ME]
    finally:
        admin.close()


def test_the_readme_admin_client_example_runs_as_shown(server_factory, capsys):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- acl-admin-example -->")[1].split("<!-- /acl-admin-example -->")[0]
    code = block.split("```python\n")[1].split("```")[0]
    server = server_factory(*SECURED, f"super.users={ME}")
    exec(compile(code, "README.md", "exec"), {"BOOTSTRAP": server.bootstrap})
    described, deleted = capsys.readouterr().out.splitlines()
    assert "orders" in described and "User:alice" in described and described == deleted
    assert _admin(server).describe_acls(EVERYTHING).result(20) == []


def _kafka_acls(server, *args: str) -> str:
    """Kafka's own kafka-acls.sh (org.apache.kafka.tools.AclCommand, the Java AdminClient underneath)."""
    done = subprocess.run(java_command("org.apache.kafka.tools.AclCommand", "--bootstrap-server", server.bootstrap,
                                       *args), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_kafka_acls_sh_adds_lists_and_removes_against_groupcoord(server_factory, capsys):
    server = server_factory(*SECURED, f"super.users={ME}")
    added = _kafka_acls(server, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", "orders",
                        "--group", "billing")
    assert "Adding ACLs for resource" in added
    _kafka_acls(server, "--add", "--deny-principal", "User:bob", "--operation", "Read", "--group", "pay",
                "--resource-pattern-type", "prefixed")
    listed = _kafka_acls(server, "--list", "--topic", "orders")
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in listed
    assert "operation=DESCRIBE" in listed and "billing" not in listed

    capsys.readouterr()
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--list"]) == 0  # the one store
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "ALLOW User:alice DESCRIBE from * on TOPIC literal 'orders'",
        "ALLOW User:alice READ from * on GROUP literal 'billing'",
        "ALLOW User:alice READ from * on TOPIC literal 'orders'",
        "DENY User:bob READ from * on GROUP prefixed 'pay'"]

    _kafka_acls(server, "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders",
                "--force")
    _kafka_acls(server, "--remove", "--group", "pay", "--resource-pattern-type", "prefixed", "--force")
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--list"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "ALLOW User:alice DESCRIBE from * on TOPIC literal 'orders'",
        "ALLOW User:alice READ from * on GROUP literal 'billing'"]
