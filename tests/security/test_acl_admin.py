"""The pure rules behind the ACL admin APIs that the wire cannot reach: version 0 requests carry no
pattern type, so these are what Kafka's request classes check for a version-0 request built in memory."""

from __future__ import annotations

import pytest

from coordinator.security.acl_admin import AclFilter, Creation, RequestInvalid, check_creations, check_filter

ANY, LITERAL, PREFIXED, TOPIC, READ, ALLOW = 1, 3, 4, 2, 3, 3


def test_version_0_filters_read_any_as_literal_and_refuse_other_patterns():
    f = AclFilter(TOPIC, None, ANY, None, None, ANY, ANY)
    assert check_filter(f, 0).pattern_type == LITERAL
    assert check_filter(f, 1).pattern_type == ANY
    with pytest.raises(RequestInvalid) as refused:
        check_filter(AclFilter(TOPIC, None, PREFIXED, None, None, ANY, ANY), 0)
    assert refused.value.unsupported_version


def test_version_0_creations_must_be_literal():
    creation = Creation(TOPIC, "t", PREFIXED, "User:a", "*", READ, ALLOW)
    with pytest.raises(RequestInvalid, match="Version 0 only supports literal"):
        check_creations([creation], 0)
    check_creations([creation], 1)
