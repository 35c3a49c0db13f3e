"""ConsumerGroupDescribe's AuthorizedOperations (KIP-430) on the wire: every group operation without an
authorizer, exactly the permitted ones with ACLs, and the INT32_MIN default when not asked or not described."""

from __future__ import annotations

import time

from coordinator.cli import main as groupcoord
from coordinator.server.apis._authorized import (
    DELETE,
    DESCRIBE,
    OMITTED,
    READ,
    bit_field,
)
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)

ME = "User:ANONYMOUS"
DESCRIBE_CONFIGS, ALTER_CONFIGS = 10, 11
EVERY_GROUP_OPERATION = bit_field(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)


def _join(wire, group: str) -> int:
    return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[])).error_code


def _described(wire, *groups: str, include: bool = True) -> dict[str, tuple[int, int]]:
    response = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(
        group_ids=list(groups), include_authorized_operations=include))
    return {g.group_id: (g.error_code, g.authorized_operations) for g in response.groups}


def _acls(server, *args: str) -> None:
    assert groupcoord(["acls", "--data-dir", str(server.data_dir), *args]) == 0


def _wait_until(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the server did not apply the ACL change"
        time.sleep(0.1)


def test_without_an_authorizer_every_group_operation_is_authorized(shared_server, wire):
    assert EVERY_GROUP_OPERATION == 3400  # what a Kafka 4 broker without an authorizer answers
    assert _join(wire, "ops-open") == ErrorCode.NONE
    assert _described(wire, "ops-open", "ops-missing", "") == {
        "ops-open": (ErrorCode.NONE, EVERY_GROUP_OPERATION),
        "ops-missing": (ErrorCode.GROUP_ID_NOT_FOUND, OMITTED),
        "": (ErrorCode.INVALID_GROUP_ID, OMITTED),
    }
    assert _described(wire, "ops-open", include=False) == {"ops-open": (ErrorCode.NONE, OMITTED)}


def test_with_acls_only_the_permitted_group_operations_are_set(server_factory, connect):
    server = server_factory("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    wire = connect(server)
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Read", "--group", "ops")
    _wait_until(lambda: _join(wire, "ops") == ErrorCode.NONE)
    # READ implies DESCRIBE.
    assert _described(wire, "ops", "other") == {"ops": (ErrorCode.NONE, bit_field(READ, DESCRIBE)),
                                                "other": (ErrorCode.GROUP_AUTHORIZATION_FAILED, OMITTED)}

    _acls(server, "--add", "--allow-principal", ME, "--operation", "Delete", "--operation", "DescribeConfigs",
          "--group", "ops")
    _wait_until(lambda: _described(wire, "ops")["ops"][1] == bit_field(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS))
    _acls(server, "--add", "--deny-principal", ME, "--operation", "Delete", "--group", "ops")
    _wait_until(lambda: _described(wire, "ops")["ops"][1] == bit_field(READ, DESCRIBE, DESCRIBE_CONFIGS))
