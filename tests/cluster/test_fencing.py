"""Fencing: an owner paused past its lease loses the shard and, woken up, cannot serve or write it."""

from __future__ import annotations

import signal
import time

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from tests.cluster.wire import (
    commit,
    commit_request,
    commit_until_accepted,
    create_shared_topic,
    fetch_offset,
    find_coordinator,
)
from tests.server.conftest import KafkaWire

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")


def test_a_paused_owner_is_fenced_and_answers_not_coordinator(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    group, topic = "fenced-group", "t"
    create_shared_topic(cluster, topic)
    owner = cluster.wait_owner(group)
    old = KafkaWire(cluster.nodes[owner].host, cluster.nodes[owner].port)
    commit_until_accepted(old, group, topic, 1)

    cluster.signal(owner, signal.SIGSTOP)
    try:
        paused_at = time.monotonic()
        new_owner = cluster.wait_owner(group, not_node=owner)
        taken_over_s = time.monotonic() - paused_at
        new = KafkaWire(cluster.nodes[new_owner].host, cluster.nodes[new_owner].port)
        commit_until_accepted(new, group, topic, 2)
        # Sent while the old owner sleeps: it finds the request when it wakes up.
        stale = old.send(ApiKey.OFFSET_COMMIT, 8, commit_request(group, topic, 99))
    finally:
        cluster.signal(owner, signal.SIGCONT)
    got, response = old.receive(ApiKey.OFFSET_COMMIT, 8)
    assert got == stale
    assert response.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    assert commit(old, group, topic, 100) == ErrorCode.NOT_COORDINATOR
    assert fetch_offset(old, group, topic)[0] == ErrorCode.NOT_COORDINATOR
    assert fetch_offset(new, group, topic) == (0, 2)  # nothing the old owner was sent got in
    deadline = time.monotonic() + 5
    while find_coordinator(old, group) != (0, new_owner):  # once it has renewed, it points to the new owner
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert taken_over_s < 5.0
    old.close()
    new.close()
