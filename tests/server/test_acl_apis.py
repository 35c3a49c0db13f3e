"""CreateAcls, DescribeAcls and DeleteAcls on the wire, every version: Kafka's errors for bad creations and
filters (one creation at a time; nothing of a refused request applied), ANY and MATCH filters, and
deletes matched against the bindings as they were before the request.
"""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

ANY, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
TOPIC, GROUP, CLUSTER, USER = 2, 3, 4, 7
ALL, READ, WRITE, ALTER, DESCRIBE = 2, 3, 4, 7, 8
DENY, ALLOW = 2, 3
ME = "User:ANONYMOUS"
AUTHORIZER = ["authorizer.class.name=acl", "allow.everyone.if.no.acl.found=true"]

Creation = CreateAclsRequest.AclCreation
DeleteFilter = DeleteAclsRequest.DeleteAclsFilter


def _creation(rtype=TOPIC, name="t", pattern=LITERAL, principal=ME, host="*", op=READ, permission=ALLOW) -> Creation:
    return Creation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
                    host=host, operation=op, permission_type=permission)


def _create(wire, version: int, *creations: Creation) -> list[tuple[int, str | None]]:
    response = wire.request(ApiKey.CREATE_ACLS, version, CreateAclsRequest(creations=list(creations)))
    return [(r.error_code, r.error_message) for r in response.results]


def _describe(wire, version: int = 3, rtype=ANY, name=None, pattern=ANY, principal=None, host=None, op=ANY,
              permission=ANY):
    return wire.request(ApiKey.DESCRIBE_ACLS, version, DescribeAclsRequest(
        resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern, principal_filter=principal,
        host_filter=host, operation=op, permission_type=permission))


def _described(wire, version: int = 3, **filters) -> set[tuple]:
    response = _describe(wire, version, **filters)
    assert response.error_code == ErrorCode.NONE, response
    return {(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation, a.permission_type)
            for r in response.resources for a in r.acls}


def _delete_filter(rtype=ANY, name=None, pattern=ANY, principal=None, host=None, op=ANY, permission=ANY):
    return DeleteFilter(resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
                        principal_filter=principal, host_filter=host, operation=op, permission_type=permission)


@pytest.fixture
def acl_wire(server_factory, connect):
    return connect(server_factory(*AUTHORIZER))


@pytest.mark.parametrize("version", range(0, 4))
def test_every_version_creates_describes_and_deletes(acl_wire, version):
    assert _create(acl_wire, version, _creation(name="orders"), _creation(rtype=GROUP, name="g", op=ALL)) == [
        (0, None), (0, None)]
    # v0 knows no pattern types: its answers carry none, and the filter's ANY reads as LITERAL.
    assert _described(acl_wire, version) == {(TOPIC, "orders", LITERAL, ME, "*", READ, ALLOW),
                                             (GROUP, "g", LITERAL, ME, "*", ALL, ALLOW)}
    response = acl_wire.request(ApiKey.DELETE_ACLS, version, DeleteAclsRequest(filters=[_delete_filter(rtype=GROUP)]))
    [result] = response.filter_results
    assert result.error_code == 0
    assert [(m.resource_type, m.resource_name, m.operation) for m in result.matching_acls] == [(GROUP, "g", ALL)]
    assert _described(acl_wire, version) == {(TOPIC, "orders", LITERAL, ME, "*", READ, ALLOW)}


def test_each_bad_creation_gets_kafkas_error_and_the_good_ones_apply(acl_wire):
    results = _create(
        acl_wire, 3,
        _creation(name="kept"),
        _creation(rtype=CLUSTER, name="my-cluster", op=ALTER),
        _creation(name=""),
        _creation(rtype=ANY),
        _creation(pattern=MATCH),
        _creation(pattern=ANY),
        _creation(op=ANY),
        _creation(permission=ANY),
        _creation(principal="alice"),
        _creation(rtype=USER, name="bob", op=ALTER),  # v3's user resource type
        _creation(name="kept"),  # again: succeeds, one copy
    )
    assert results == [
        (0, None),
        (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
        (ErrorCode.INVALID_REQUEST, "Invalid resourceType ANY"),
        (ErrorCode.INVALID_REQUEST, "Invalid patternType MATCH"),
        (ErrorCode.INVALID_REQUEST, "Invalid patternType ANY"),
        (ErrorCode.INVALID_REQUEST, "Invalid operation ANY"),
        (ErrorCode.INVALID_REQUEST, "Invalid permissionType ANY"),
        (ErrorCode.INVALID_REQUEST, "expected a string in format principalType:principalName but got alice"),
        (0, None),
        (0, None),
    ]
    assert _described(acl_wire) == {(TOPIC, "kept", LITERAL, ME, "*", READ, ALLOW),
                                    (USER, "bob", LITERAL, ME, "*", ALTER, ALLOW)}


def test_unknown_codes_refuse_the_whole_request_and_apply_nothing(acl_wire):
    unknown = _create(acl_wire, 3, _creation(name="fine"), _creation(rtype=0), _creation(op=99))
    assert [code for code, _ in unknown] == [ErrorCode.INVALID_REQUEST] * 3
    assert _described(acl_wire) == set()
    assert _describe(acl_wire, 3, permission=0).error_code == ErrorCode.INVALID_REQUEST
    response = acl_wire.request(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[
        _delete_filter(), _delete_filter(pattern=0)]))
    assert [r.error_code for r in response.filter_results] == [ErrorCode.INVALID_REQUEST] * 2


def test_filters_match_as_kafkas_acl_binding_filter(acl_wire):
    assert {code for code, _ in _create(
        acl_wire, 3,
        _creation(name="orders.eu", op=READ),
        _creation(name="orders.", pattern=PREFIXED, op=WRITE),
        _creation(name="*", op=DESCRIBE),
        _creation(name="other", principal="User:bob", host="10.0.0.1", permission=DENY),
    )} == {0}
    names = lambda **f: {entry[1] for entry in _described(acl_wire, **f)}  # noqa: E731
    # MATCH: every binding that applies to the name: literal, wildcard and prefixes of it.
    assert names(rtype=TOPIC, name="orders.eu", pattern=MATCH) == {"orders.eu", "orders.", "*"}
    assert names(rtype=TOPIC, name="orders.us", pattern=MATCH) == {"orders.", "*"}
    # ANY with a name: that exact name, whatever its pattern type; a pattern type: that one only.
    assert names(name="orders.", pattern=ANY) == {"orders."}
    assert names(name="orders.eu", pattern=PREFIXED) == set()
    assert names(pattern=LITERAL) == {"orders.eu", "*", "other"}
    assert names(principal="User:bob") == {"other"}
    assert names(host="10.0.0.1", permission=DENY) == {"other"}
    assert names(op=WRITE) == {"orders."}
    assert names(rtype=GROUP) == set()


def test_every_delete_filter_sees_the_bindings_before_the_request(acl_wire):
    _create(acl_wire, 3, _creation(name="a"), _creation(name="b"))
    response = acl_wire.request(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[
        _delete_filter(rtype=TOPIC), _delete_filter(name="a"), _delete_filter(name="nothing")]))
    assert [sorted(m.resource_name for m in r.matching_acls) for r in response.filter_results] == [
        ["a", "b"], ["a"], []]
    assert _described(acl_wire) == set()


def test_acl_changes_need_alter_and_describe_on_the_cluster(server_factory, connect):
    server = server_factory("authorizer.class.name=acl", "super.users=User:root")
    wire = connect(server)
    assert _create(wire, 3, _creation()) == [(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")]
    assert _describe(wire).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    response = wire.request(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[_delete_filter()]))
    assert response.filter_results[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_without_an_authorizer_every_acl_api_answers_security_disabled(wire):
    assert _create(wire, 3, _creation()) == [(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")]
    described = _describe(wire)
    assert (described.error_code, described.error_message) == (ErrorCode.SECURITY_DISABLED,
                                                                "No Authorizer is configured on the broker")
    response = wire.request(ApiKey.DELETE_ACLS, 3, DeleteAclsRequest(filters=[_delete_filter()]))
    assert response.filter_results[0].error_code == ErrorCode.SECURITY_DISABLED


def test_a_broken_acl_file_fails_the_change_and_leaves_it_as_it_was(server_factory, connect):
    server = server_factory(*AUTHORIZER)
    wire = connect(server)
    acls_file = server.data_dir / "acls.json"
    acls_file.write_text("not json")
    [(code, message)] = _create(wire, 3, _creation())
    assert code == ErrorCode.UNKNOWN_SERVER_ERROR and "not JSON" in message
    assert acls_file.read_text() == "not json"
