"""Kafka's ACL rules (StandardAuthorizer), the ACL file, and `groupcoord acls`."""

from __future__ import annotations

import json

import pytest

from coordinator.cli import main
from coordinator.security.acls import (
    AclBinding,
    AclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    acls_path,
    read_acls,
    write_acls,
)
from coordinator.security.authorizer import Authorizer, decide, decide_any, parse_super_users

G, T, C = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
ALLOW, DENY = Permission.ALLOW, Permission.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def acl(rtype, name, op, principal="User:alice", permission=ALLOW, pattern=LITERAL, host="*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def allowed(bindings, op, rtype, name, principal="User:alice", host="10.0.0.1", supers=(), open_if_none=False):
    return decide(bindings, principal, host, op, rtype, name, frozenset(supers), open_if_none)


def test_a_literal_allow_grants_that_operation_on_that_resource_only():
    rules = [acl(G, "billing", Operation.READ)]
    assert allowed(rules, Operation.READ, G, "billing")
    assert not allowed(rules, Operation.READ, G, "billing-eu")
    assert not allowed(rules, Operation.DELETE, G, "billing")
    assert not allowed(rules, Operation.READ, G, "billing", principal="User:bob")


def test_prefixed_and_wildcard_patterns_and_principals():
    assert allowed([acl(G, "team-a.", Operation.READ, pattern=PREFIXED)], Operation.READ, G, "team-a.orders")
    assert not allowed([acl(G, "team-a.", Operation.READ, pattern=PREFIXED)], Operation.READ, G, "team-b.orders")
    assert allowed([acl(T, "*", Operation.WRITE)], Operation.WRITE, T, "anything")
    assert allowed([acl(T, "orders", Operation.WRITE, principal="User:*")], Operation.WRITE, T, "orders",
                   principal="User:carol")


def test_deny_wins_over_allow():
    rules = [acl(G, "*", Operation.ALL), acl(G, "payroll", Operation.READ, permission=DENY)]
    assert allowed(rules, Operation.READ, G, "orders")
    assert not allowed(rules, Operation.READ, G, "payroll")
    assert allowed(rules, Operation.DESCRIBE, G, "payroll")  # only READ is denied
    assert not allowed([*rules, acl(G, "pay", Operation.ALL, permission=DENY, pattern=PREFIXED)],
                       Operation.DESCRIBE, G, "payroll")


def test_read_write_delete_and_alter_imply_describe_and_all_implies_everything():
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert allowed([acl(T, "t", op)], Operation.DESCRIBE, T, "t"), op
    assert not allowed([acl(T, "t", Operation.CREATE)], Operation.DESCRIBE, T, "t")
    assert allowed([acl(T, "t", Operation.ALTER_CONFIGS)], Operation.DESCRIBE_CONFIGS, T, "t")
    assert allowed([acl(T, "t", Operation.ALL)], Operation.DELETE, T, "t")


def test_hosts_are_matched_exactly_or_by_wildcard():
    assert allowed([acl(G, "g", Operation.READ, host="10.0.0.1")], Operation.READ, G, "g")
    assert not allowed([acl(G, "g", Operation.READ, host="10.0.0.2")], Operation.READ, G, "g")


def test_no_acl_on_a_resource_falls_back_to_allow_everyone_if_no_acl_found():
    others = [acl(G, "other", Operation.READ, principal="User:bob")]
    assert not allowed(others, Operation.READ, G, "g")
    assert allowed(others, Operation.READ, G, "g", open_if_none=True)
    # ... but a resource with ACLs (for anyone) is closed to those they do not name
    assert not allowed(others, Operation.READ, G, "other", open_if_none=True)


def test_super_users_may_do_anything():
    rules = [acl(G, "g", Operation.ALL, permission=DENY, principal="User:*")]
    supers = parse_super_users("User:admin;User:ops")
    assert allowed(rules, Operation.DELETE, G, "g", principal="User:admin", supers=supers)


def test_write_on_any_topic_is_what_an_idempotent_producer_needs():
    rules = [acl(T, "orders", Operation.WRITE)]
    assert decide_any(rules, "User:alice", "h", Operation.WRITE, T, frozenset(), False)
    assert not decide_any(rules, "User:bob", "h", Operation.WRITE, T, frozenset(), False)
    assert not decide_any([*rules, acl(T, "*", Operation.WRITE, permission=DENY)], "User:alice", "h",
                          Operation.WRITE, T, frozenset(), False)


def test_bad_bindings_are_refused_with_a_reason():
    with pytest.raises(AclError, match="User:<name>"):
        acl(G, "g", Operation.READ, principal="alice")
    with pytest.raises(AclError, match="only valid name for the CLUSTER resource is kafka-cluster"):
        acl(ResourceType.CLUSTER, "c", Operation.ALTER)


def test_the_file_round_trips_and_the_authorizer_follows_its_changes(tmp_path):
    path = acls_path(tmp_path)
    now = [0.0]
    authorizer = Authorizer(path, [], False, clock=lambda: now[0])
    assert not authorizer.allows("User:alice", "h", Operation.READ, G, "g")  # no file: no ACLs
    write_acls(path, [acl(G, "g", Operation.READ)])
    assert read_acls(path) == [acl(G, "g", Operation.READ)]
    now[0] += 0.5
    assert not authorizer.allows("User:alice", "h", Operation.READ, G, "g")  # checked at most once a second
    now[0] += 1.0
    assert authorizer.allows("User:alice", "h", Operation.READ, G, "g")
    path.write_text("not json")
    now[0] += 1.0
    assert authorizer.allows("User:alice", "h", Operation.READ, G, "g")  # a broken file keeps the old ACLs


def test_groupcoord_acls_adds_lists_and_removes_like_kafka_acls(tmp_path, capsys):
    base = ["acls", "--data-dir", str(tmp_path)]
    assert main([*base, "--add", "--allow-principal", "User:alice", "--consumer", "--topic", "orders",
                 "--group", "billing"]) == 0
    assert main([*base, "--add", "--deny-principal", "User:bob", "--operation", "Read", "--group", "bill",
                 "--resource-pattern-type", "prefixed"]) == 0
    capsys.readouterr()
    assert main([*base, "--list", "--group", "billing"]) == 0
    assert capsys.readouterr().out.splitlines() == ["ALLOW User:alice READ from * on GROUP literal 'billing'"]
    assert main([*base, "--remove", "--allow-principal", "User:alice", "--operation", "Describe",
                 "--topic", "orders"]) == 0
    stored = json.loads(acls_path(tmp_path).read_text())
    assert [(b["resource_type"], b["operation"], b["permission"]) for b in stored] == [
        ("TOPIC", "READ", "ALLOW"), ("GROUP", "READ", "ALLOW"), ("GROUP", "READ", "DENY")]
    assert main([*base, "--add", "--allow-principal", "alice", "--operation", "Read", "--group", "g"]) == 1
    assert "User:<name>" in capsys.readouterr().err
    assert main([*base, "--add", "--allow-principal", "User:alice", "--operation", "Read"]) == 2
