"""WriteTxnMarkers (key 27), v1–2: a transaction coordinator's markers for partitions this node owns.

Between the nodes of a cluster (coordinator/cluster/txn.py), as between Kafka's brokers: the
transaction coordinator sends each partition's leader the commit/abort markers to write. A
`__consumer_offsets` partition takes the marker through its group shard (pending transactional
offsets applied or dropped), a data partition through the data plane (producer epoch and coordinator
epoch checked, as Kafka's append of a marker). Each partition is answered once its marker is durable.
Needs CLUSTER_ACTION on the cluster (KafkaApis.handleWriteTxnMarkersRequest). A `__consumer_offsets`
partition this node does not serve answers NOT_LEADER_OR_FOLLOWER, which the sender retries.
"""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.data_plane import ProduceError
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from coordinator.topics import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import WriteTxnMarkersResponse as Response


def _answer(request: Any, codes: dict[tuple[int, str, int], int], default: int) -> Response:
    return Response(markers=[Response.WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        Response.WritableTxnMarkerTopicResult(name=t.name, partitions=[
            Response.WritableTxnMarkerPartitionResult(partition_index=p,
                                                      error_code=codes.get((i, t.name, p), default))
            for p in t.partition_indexes]) for t in m.topics]) for i, m in enumerate(request.markers)])


def write_txn_markers_error(request: Any, code: ErrorCode, version: int) -> Response:
    return _answer(request, {}, int(code))


@api(ApiKey.WRITE_TXN_MARKERS, versions=(1, 2), error_response=write_txn_markers_error)
def write_txn_markers(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    if not permits_cluster(broker, ctx, Operation.CLUSTER_ACTION):
        return _answer(request, {}, int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    return Pending(_write(broker, request))


async def _write(broker: Broker, request: Any) -> Response:
    codes: dict[tuple[int, str, int], int] = {}
    waits: list[tuple[tuple[int, str, int], asyncio.Future[None] | Any]] = []
    now = now_ms()
    for i, marker in enumerate(request.markers):
        for t in marker.topics:
            for index in t.partition_indexes:
                key = (i, t.name, index)
                if t.name == OFFSETS_TOPIC:
                    cluster = broker.cluster
                    if not 0 <= index < broker.groups.num_partitions or (cluster is not None
                                                                         and not cluster.serves(index)):
                        codes[key] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                        continue
                    waits.append((key, broker.groups.write_marker(index, marker.producer_id, marker.producer_epoch,
                                                                  marker.transaction_result,
                                                                  marker.coordinator_epoch)))
                    continue
                topic = broker.topics.get(t.name)
                if topic is None or not 0 <= index < topic.partitions:
                    codes[key] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    continue
                try:
                    waits.append((key, broker.data.write_marker(topic, index, marker.producer_id,
                                                                marker.producer_epoch, marker.transaction_result,
                                                                marker.coordinator_epoch, now)))
                except ProduceError as exc:
                    codes[key] = int(exc.code)
                except OSError:
                    codes[key] = int(ErrorCode.KAFKA_STORAGE_ERROR)
    for key, written in waits:
        try:
            if isinstance(written, asyncio.Future):
                await written
            else:
                await broker.data.wait_durable(written)
        except OSError:  # not durable: the sender writes it again
            codes[key] = int(ErrorCode.KAFKA_STORAGE_ERROR)
    return _answer(request, codes, 0)
