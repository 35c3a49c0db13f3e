"""FindCoordinator over the wire: groups and transactional ids here, batched keys, unknown key types refused."""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import FindCoordinatorRequest

GROUP, TRANSACTION, SHARE = 0, 1, 2


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_key_is_coordinated_by_this_node(wire, shared_server, version):
    response = wire.request(ApiKey.FIND_COORDINATOR, version, FindCoordinatorRequest(key="my-group", key_type=GROUP))
    assert response.error_code == ErrorCode.NONE
    assert (response.node_id, response.host, response.port) == (0, shared_server.host, shared_server.port)


@pytest.mark.parametrize("version", [4, 5, 6])
def test_batched_keys_get_one_answer_each_in_order(wire, shared_server, version):
    keys = ["g1", "g2", "", "g3"]
    response = wire.request(ApiKey.FIND_COORDINATOR, version,
                            FindCoordinatorRequest(key_type=GROUP, coordinator_keys=keys))
    assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in response.coordinators] == [
        (k, 0, shared_server.host, shared_server.port, ErrorCode.NONE) for k in keys]


def test_transaction_keys_are_coordinated_by_this_node_and_empty_ones_are_invalid(wire, shared_server):
    old = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="tx", key_type=TRANSACTION))
    assert (old.error_code, old.node_id, old.port) == (ErrorCode.NONE, 0, shared_server.port)
    empty = wire.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="", key_type=TRANSACTION))
    assert (empty.error_code, empty.node_id) == (ErrorCode.INVALID_REQUEST, -1)
    batched = wire.request(ApiKey.FIND_COORDINATOR, 4,
                           FindCoordinatorRequest(key_type=TRANSACTION, coordinator_keys=["a", "", "b"]))
    assert [(c.key, c.error_code, c.node_id) for c in batched.coordinators] == [
        ("a", ErrorCode.NONE, 0), ("", ErrorCode.INVALID_REQUEST, -1), ("b", ErrorCode.NONE, 0)]


@pytest.mark.parametrize("version, key_type", [(1, 7), (4, 7), (5, SHARE), (6, 9)])
def test_unknown_key_types_are_invalid_request(wire, version, key_type):
    request = FindCoordinatorRequest(key="k", key_type=key_type, coordinator_keys=["k"])
    response = wire.request(ApiKey.FIND_COORDINATOR, version, request)
    codes = [response.error_code] if version < 4 else [c.error_code for c in response.coordinators]
    assert codes == [ErrorCode.INVALID_REQUEST]


def test_share_keys_at_v6_are_not_served(wire):
    response = wire.request(ApiKey.FIND_COORDINATOR, 6,
                            FindCoordinatorRequest(key_type=SHARE, coordinator_keys=["g:t:0"]))
    assert [c.error_code for c in response.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]


def test_advertised_listener_is_what_clients_are_told(server_factory, connect):
    srv = server_factory("advertised.listeners=PLAINTEXT://kafka.example:19092")
    response = connect(srv).request(ApiKey.FIND_COORDINATOR, 4,
                                    FindCoordinatorRequest(key_type=GROUP, coordinator_keys=["g"]))
    assert [(c.host, c.port) for c in response.coordinators] == [("kafka.example", 19092)]
