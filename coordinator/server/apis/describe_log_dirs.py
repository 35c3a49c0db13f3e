"""DescribeLogDirs (key 35), v0–4: this node's one log directory (`log.dirs`) and its partitions.

v1 as v0 (throttling before answering); v2 flexible; v3 top-level error code; v4 the volume's
total and usable bytes. As Kafka's KafkaApis.handleDescribeLogDirsRequest and
ReplicaManager.describeLogDirs: DESCRIBE on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED with no
results; null topics means every partition; a partition asked for that this node does not host
is left out, and so is a topic left with none. Per partition: the size of its segments, offset
lag 0 (the log end is the high watermark: one replica), never a future log. A partition of a
topic whose log has not been opened yet counts as empty (Kafka creates it with the topic).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeLogDirsResponse

INT64_MAX = 2**63 - 1
Result = DescribeLogDirsResponse.DescribeLogDirsResult
TopicEntry = DescribeLogDirsResponse.DescribeLogDirsTopic
PartitionEntry = DescribeLogDirsResponse.DescribeLogDirsPartition


def _volume_bytes(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding ``path``; negative sizes (Kafka's
    adjustForLargeFileSystems) read as Long.MAX_VALUE."""
    stats = os.statvfs(path)
    total, usable = stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize
    return tuple(INT64_MAX if n < 0 or n > INT64_MAX else n for n in (total, usable))  # type: ignore[return-value]


def _hosted(broker: Broker) -> dict[str, list[int]]:
    return {t.name: list(range(t.partitions)) for t in broker.topics}


@api(ApiKey.DESCRIBE_LOG_DIRS, versions=(0, 4))
def describe_log_dirs(broker: Broker, request: Any, ctx: RequestContext) -> DescribeLogDirsResponse:
    if not permits_cluster(broker, ctx, Operation.DESCRIBE):
        return DescribeLogDirsResponse(throttle_time_ms=0, error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                                       results=[])
    hosted = _hosted(broker)
    wanted: Mapping[str, Collection[int]]
    if request.topics is None:
        wanted = hosted
    else:
        asked: dict[str, set[int]] = {}
        for t in request.topics:
            indexes = set(hosted.get(t.topic, ())) & set(t.partitions)
            if indexes:
                asked.setdefault(t.topic, set()).update(indexes)
        wanted = asked
    log_dir = os.path.abspath(broker.data_dir)
    logs = broker.data.logs
    topics = []
    for name in sorted(wanted):
        partitions = []
        for index in sorted(wanted[name]):
            log = logs.get(name, index)
            partitions.append(PartitionEntry(partition_index=index, partition_size=log.size_bytes if log else 0,
                                             offset_lag=0, is_future_key=False))
        topics.append(TopicEntry(name=name, partitions=partitions))
    try:
        total, usable = _volume_bytes(log_dir)
    except OSError:  # the directory is gone or unreadable: Kafka's offline log dir
        return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=[
            Result(error_code=int(ErrorCode.KAFKA_STORAGE_ERROR), log_dir=log_dir, topics=[])])
    return DescribeLogDirsResponse(throttle_time_ms=0, error_code=0, results=[
        Result(error_code=0, log_dir=log_dir, topics=topics, total_bytes=total, usable_bytes=usable)])
