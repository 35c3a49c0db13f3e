"""Raw requests to one node of a cluster: commits, fetches and coordinator lookups by group."""

from __future__ import annotations

import time
from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import FindCoordinatorRequest, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest
from protocol.primitives import ZERO_UUID

RETRIABLE = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}


def create_shared_topic(cluster: Any, topic: str, partitions: int = 1) -> None:
    """Create `topic` on one node only (node 1): the others learn it through the database (commits are
    refused for topics that do not exist, as Kafka refuses them)."""
    from tests.server.admin_wire import create_topic
    from tests.server.conftest import KafkaWire

    node = cluster.nodes[1]
    wire = KafkaWire(node.host, node.port)
    try:
        create_topic(wire, topic, partitions)
    finally:
        wire.close()


def commit_request(group: str, topic: str, offset: int) -> OffsetCommitRequest:
    """A simple (memberless) commit of `offset` for partition 0 of `topic`."""
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])


def commit(wire: Any, group: str, topic: str, offset: int) -> int:
    response = wire.request(ApiKey.OFFSET_COMMIT, 8, commit_request(group, topic, offset))
    return int(response.topics[0].partitions[0].error_code)


def commit_until_accepted(wire: Any, group: str, topic: str, offset: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while (code := commit(wire, group, topic, offset)) in RETRIABLE:
        assert time.monotonic() < deadline, f"commit still answered {ErrorCode(code).name}"
        time.sleep(0.05)
    assert code == ErrorCode.NONE, ErrorCode(code).name


def fetch_offset(wire: Any, group: str, topic: str) -> tuple[int, int]:
    """(error code, committed offset of partition 0 of `topic`)."""
    response = wire.request(ApiKey.OFFSET_FETCH, 8, OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])]))
    [answer] = response.groups
    if answer.error_code:
        return int(answer.error_code), -1
    return 0, int(answer.topics[0].partitions[0].committed_offset)


def partitions_of(wire: Any, topic: str) -> int | None:
    """How many partitions the node says `topic` has (None: it does not know the topic)."""
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(ZERO_UUID, topic)],
                              allow_auto_topic_creation=False)
    [found] = wire.request(ApiKey.METADATA, 12, request).topics
    return len(found.partitions) if found.error_code == ErrorCode.NONE else None


def find_coordinator(wire: Any, group: str) -> tuple[int, int]:
    """(error code, node id) of the group's coordinator as this node sees it."""
    response = wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]))
    [found] = response.coordinators
    return int(found.error_code), int(found.node_id)


class WireCommitter:
    """A client committing ever larger offsets for one group, straight on the wire: it looks the
    coordinator up (FindCoordinator on any reachable node) and moves when told NOT_COORDINATOR or cut
    off, as Kafka's clients do. Records every acknowledged offset and every error code it met."""

    def __init__(self, nodes: list[tuple[str, int]], group: str, topic: str = "t") -> None:
        self.nodes, self.group, self.topic = nodes, group, topic
        self.acknowledged: list[tuple[float, int]] = []
        self.errors: list[int] = []
        self.stop = False
        self._wire: Any = None

    def _coordinator(self) -> Any:
        from tests.server.conftest import KafkaWire

        for host, port in self.nodes:
            try:
                wire = KafkaWire(host, port)
            except OSError:
                continue
            try:
                code, node = find_coordinator(wire, self.group)
            except (OSError, ConnectionError):
                wire.close()
                continue
            wire.close()
            if code != ErrorCode.NONE:
                self.errors.append(code)
                continue
            target = self.nodes[node - 1]  # node ids are 1.. in the order of `nodes`
            try:
                return KafkaWire(*target)
            except OSError:
                continue
        return None

    def run(self) -> None:
        offset = 0
        while not self.stop:
            if self._wire is None:
                self._wire = self._coordinator()
                if self._wire is None:
                    time.sleep(0.05)
                    continue
            offset += 1
            try:
                code = commit(self._wire, self.group, self.topic, offset)
            except (OSError, ConnectionError, AssertionError):
                self._wire.close()
                self._wire = None
                continue
            if code == ErrorCode.NONE:
                self.acknowledged.append((time.monotonic(), offset))
            else:
                self.errors.append(code)
                self._wire.close()
                self._wire = None
                time.sleep(0.02)
            time.sleep(0.01)
        if self._wire is not None:
            self._wire.close()

    def last_acknowledged(self) -> int:
        return self.acknowledged[-1][1] if self.acknowledged else 0
