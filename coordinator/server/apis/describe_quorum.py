"""DescribeQuorum (key 55), v0–2, answered as a single-node combined broker+controller answers it
(a KRaft broker forwards it to the active controller: KafkaRaftClient.handleDescribeQuorumRequest).

v0 flexible; v1 the replicas' last fetch and caught-up timestamps (the leader's: now); v2 error
messages, replica directory ids and the voters' listeners. DESCRIBE on the CLUSTER, else a
top-level CLUSTER_AUTHORIZATION_FAILED. Only `__cluster_metadata` partition 0 is described,
alone; anything else is UNKNOWN_TOPIC_OR_PARTITION per partition asked for.

This node is the quorum's only voter and its leader; there are no observers. What is not held
here is answered as Kafka answers a quorum without it: there is no metadata log (topics live in
topics.json), so its high watermark and the voter's log end offset are 0, the leader epoch is 1
(the first election's), and the voter has no directory id (zero UUID, as for a statically
configured voter). The v2 listeners are this node's client listeners, as advertised: there is
no separate controller listener. With no error the messages are "", as Kafka's (the schema's
default).
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker, advertised_by_listener_name
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeQuorumResponse
from protocol.primitives import ZERO_UUID

METADATA_TOPIC = "__cluster_metadata"
LEADER_EPOCH = 1
METADATA_HIGH_WATERMARK = 0
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."  # Kafka's Errors text
TopicData = DescribeQuorumResponse.TopicData
PartitionData = DescribeQuorumResponse.PartitionData
ReplicaState = DescribeQuorumResponse.ReplicaState
Node = DescribeQuorumResponse.Node
Listener = DescribeQuorumResponse.Listener


def _asks_for_the_metadata_partition(request: Any) -> bool:
    """Kafka's RaftUtil.hasValidTopicPartition: exactly one topic, the metadata one, partition 0 alone."""
    return (len(request.topics) == 1 and request.topics[0].topic_name == METADATA_TOPIC
            and [p.partition_index for p in request.topics[0].partitions] == [0])


@api(ApiKey.DESCRIBE_QUORUM, versions=(0, 2))
def describe_quorum(broker: Broker, request: Any, ctx: RequestContext) -> DescribeQuorumResponse:
    if not permits_cluster(broker, ctx, Operation.DESCRIBE):
        return DescribeQuorumResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                                      error_message="Cluster authorization failed.", topics=[], nodes=[])
    if not _asks_for_the_metadata_partition(request):
        code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return DescribeQuorumResponse(error_code=0, error_message="", nodes=[], topics=[
            TopicData(topic_name=t.topic_name, partitions=[
                PartitionData(partition_index=p.partition_index, error_code=code,
                              error_message=UNKNOWN_PARTITION_MESSAGE, current_voters=[], observers=[])
                for p in t.partitions]) for t in request.topics])
    node = broker.node_id
    voter = ReplicaState(replica_id=node, replica_directory_id=ZERO_UUID, log_end_offset=METADATA_HIGH_WATERMARK,
                         last_fetch_timestamp=ctx.now_ms, last_caught_up_timestamp=ctx.now_ms)
    partition = PartitionData(partition_index=0, error_code=0, error_message="", leader_id=node,
                              leader_epoch=LEADER_EPOCH, high_watermark=METADATA_HIGH_WATERMARK,
                              current_voters=[voter], observers=[])
    listeners = [Listener(name=name, host=listener.host, port=listener.port)
                 for name, listener in advertised_by_listener_name(broker.config).items()]
    return DescribeQuorumResponse(error_code=0, error_message="",
                                  topics=[TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
                                  nodes=[Node(node_id=node, listeners=listeners)])
