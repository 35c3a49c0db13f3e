"""The share.* GROUP configs take effect over the wire as in Kafka 4.4: the lock duration on new
acquisitions (and in AcquisitionLockTimeoutMs), the delivery count limit on release, RENEW refused
when disabled, the heartbeat interval in ShareGroupHeartbeat answers, share.auto.offset.reset
(earliest, by_duration) when a share-partition is initialized, share.isolation.level=read_committed
leaving out open and aborted transactions."""

from __future__ import annotations

import time
import uuid

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareGroupHeartbeatRequest

from .admin_wire import produce
from .test_group_configs import SET, alter
from .test_share_wire import RELEASE, Ack, acquired, create, join, share_fetch
from .test_transactions_wire import add, end, init, txn_batch
from .test_transactions_wire import produce as produce_txn

RENEW = 4


def test_lock_duration_delivery_limit_renew_and_earliest(wire):
    name, topic_id = create(wire)
    produce(wire, name, 0, 10)  # before the share-partition exists: only earliest delivers these
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert alter(wire, group, ("share.auto.offset.reset", SET, "earliest"),
                 ("share.record.lock.duration.ms", SET, "15000"), ("share.delivery.count.limit", SET, "2"),
                 ("share.renew.acknowledge.enable", SET, "false")) == (0, None)
    join(wire, group, "m1", name)
    opened = share_fetch(wire, group, "m1", 0, topic_id)  # the session's first fetch acquires too
    assert (opened.acquisition_lock_timeout_ms, acquired(opened)) == (15000, [(0, 9, 1)])
    renewed = wire.request(ApiKey.SHARE_ACKNOWLEDGE, 2, Ack(
        group_id=group, member_id="m1", share_session_epoch=1, is_renew_ack=True, topics=[Ack.AcknowledgeTopic(
            topic_id, [Ack.AcknowledgePartition(0, [Ack.AcknowledgementBatch(0, 9, [RENEW])])])]))
    assert renewed.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    again = share_fetch(wire, group, "m1", 2, topic_id, acks=[(0, 9, RELEASE)])
    assert acquired(again) == [(0, 9, 2)]
    # the second release reaches the limit of 2 deliveries: archived, never delivered again
    last = share_fetch(wire, group, "m1", 3, topic_id, acks=[(0, 9, RELEASE)])
    assert last.responses[0].partitions[0].acknowledge_error_code == 0 and acquired(last) == []
    # without the group's settings the broker's apply again (30 s locks)
    assert alter(wire, group, ("share.record.lock.duration.ms", 1, None)) == (0, None)
    assert share_fetch(wire, group, "m1", 4, topic_id).acquisition_lock_timeout_ms == 30000


def test_by_duration_starts_at_the_first_record_that_recent(wire):
    name, topic_id = create(wire)
    now_ms = int(time.time() * 1000)
    produce(wire, name, 0, 3, timestamp=now_ms - 3 * 3_600_000)  # offsets 0-2, three hours old
    produce(wire, name, 0, 2, timestamp=now_ms - 60_000)  # offsets 3-4, a minute old
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert alter(wire, group, ("share.auto.offset.reset", SET, "by_duration:PT1H")) == (0, None)
    join(wire, group, "m1", name)
    assert acquired(share_fetch(wire, group, "m1", 0, topic_id)) == [(3, 4, 1)]


def test_read_committed_skips_open_and_aborted_transactions(wire):
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert alter(wire, group, ("share.auto.offset.reset", SET, "earliest"),
                 ("share.isolation.level", SET, "read_committed")) == (0, None)
    join(wire, group, "m1", name)
    tid = f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    add(wire, tid, pid, epoch, name, 0)
    assert produce_txn(wire, tid, name, 0, txn_batch(pid, epoch, 0, 3)).error_code == 0  # offsets 0-2, open
    assert acquired(share_fetch(wire, group, "m1", 0, topic_id)) == []  # nothing stable yet
    assert end(wire, tid, pid, epoch, commit=False) == 0  # marker at 3
    produce(wire, name, 0, 2)  # offsets 4-5, plain records
    deadline = time.monotonic() + 10
    ranges: list[tuple[int, int, int]] = []
    epoch_of_session = 1
    while not ranges and time.monotonic() < deadline:  # the marker is written just after EndTxn's answer
        ranges = acquired(share_fetch(wire, group, "m1", epoch_of_session, topic_id))
        epoch_of_session += 1
    # the aborted records 0-2 are archived, never handed out; the marker and the plain records are
    assert ranges and ranges[0][0] >= 3 and (5 in range(ranges[-1][0], ranges[-1][1] + 1))
    assert all(not (first <= offset <= last) for first, last, _ in ranges for offset in (0, 1, 2))


def test_read_uncommitted_hands_out_the_open_transaction(wire):
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert alter(wire, group, ("share.auto.offset.reset", SET, "earliest")) == (0, None)
    join(wire, group, "m1", name)
    tid = f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    add(wire, tid, pid, epoch, name, 0)
    produce_txn(wire, tid, name, 0, txn_batch(pid, epoch, 0, 3))
    assert acquired(share_fetch(wire, group, "m1", 0, topic_id)) == [(0, 2, 1)]


def test_heartbeat_interval_of_the_group_is_given_to_its_members(wire):
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert alter(wire, group, ("share.heartbeat.interval.ms", SET, "7000")) == (0, None)
    response = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id=uuid.uuid4().hex[:22], member_epoch=0, subscribed_topic_names=["none"]))
    assert (response.error_code, response.heartbeat_interval_ms) == (0, 7000)
