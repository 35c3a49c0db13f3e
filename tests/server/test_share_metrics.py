"""Share group metrics on the Prometheus page, as Kafka 4.4 names them (GroupCoordinatorMetrics'
group-count and share-group-count, ShareGroupMetrics' RecordAcknowledgementsPerSec by ackType,
SharePartitionMetrics' InFlightMessageCount and AcquisitionLockTimeoutPerSec) and ours where Kafka
has none (deliveries, redeliveries, archived records). The counters must have moved by exactly
what the raw requests did."""

from __future__ import annotations

import time
import uuid

from protocol.api_keys import ApiKey
from protocol.messages import ShareGroupHeartbeatRequest
from tests.clients.test_metrics import http_get, sample
from tests.conftest import free_port

from .admin_wire import produce
from .test_share_wire import ACCEPT, REJECT, RELEASE, acquired, create, share_ack, share_fetch

GROUP_METRICS = "kafka_server_group_coordinator_metrics_"


def page_of(port: int) -> str:
    status, page = http_get(port, "/metrics")
    assert status == 200
    return page


def test_share_metrics_count_what_the_members_did(server_factory, connect):
    http_port = free_port()
    server = server_factory(f"http.listener=127.0.0.1:{http_port}", "group.share.record.lock.duration.ms=1000",
                            "group.share.min.record.lock.duration.ms=1000", "group.share.delivery.count.limit=2")
    wire = connect(server)
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    joined = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id=uuid.uuid4().hex[:22], member_epoch=0, subscribed_topic_names=[name]))
    assert joined.error_code == 0
    share_fetch(wire, group, "m1", 0, topic_id)  # initializes the share-partition at the end (latest)
    produce(wire, name, 0, 10)
    assert acquired(share_fetch(wire, group, "m1", 1, topic_id)) == [(0, 9, 1)]
    page = page_of(http_port)
    assert sample(page, GROUP_METRICS + "group_count", protocol="share") == 1
    assert sample(page, GROUP_METRICS + "share_group_count", state="Stable") == 1
    assert sample(page, GROUP_METRICS + "share_group_rebalance_count") >= 1
    in_flight = dict(group=group, partition="0", topic=name)
    assert sample(page, "kafka_server_share_partition_metrics_in_flight_message_count", **in_flight) == 10
    assert sample(page, "groupcoord_share_partition_acquired_records", **in_flight) == 10

    # 0-3 accepted, 4 rejected, 5-6 released (back with count 2), 7-9 left to their 1 s locks
    assert share_ack(wire, group, "m1", 2, topic_id, [(0, 3, ACCEPT), (4, 4, REJECT), (5, 6, RELEASE)]).error_code == 0
    assert acquired(share_fetch(wire, group, "m1", 3, topic_id)) == [(5, 6, 2)]
    # released again at the limit of 2 deliveries: archived
    assert share_ack(wire, group, "m1", 4, topic_id, [(5, 6, RELEASE)]).error_code == 0
    deadline = time.monotonic() + 10
    while sample(page_of(http_port), "kafka_server_share_partition_metrics_acquisition_lock_timeout_total",
                 **in_flight) < 3:
        assert time.monotonic() < deadline, "the locks of 7-9 never ran out"
        time.sleep(0.05)  # poll interval
    page = page_of(http_port)
    acks = "kafka_server_share_group_metrics_record_acknowledgements_total"
    assert (sample(page, acks, ackType="Accept"), sample(page, acks, ackType="Reject"),
            sample(page, acks, ackType="Release")) == (4, 1, 4)
    delivered = "groupcoord_share_records_delivered_total"
    assert (sample(page, delivered, group=group, delivery="first"),
            sample(page, delivered, group=group, delivery="redelivery")) == (10, 2)
    archived = "groupcoord_share_records_archived_total"
    assert (sample(page, archived, group=group, reason="rejected"),
            sample(page, archived, group=group, reason="delivery_limit")) == (1, 2)
    assert sample(page, "groupcoord_share_partition_acquired_records", **in_flight) == 0
