"""The report's share-group section over a log the real server wrote while a share group ran over
the wire (the project's codec, as tests/server/test_share_wire.py speaks it).

Scenario, group delivery limit 2, one partition of 10 records then 5 more:
- m1 joins (ShareGroupHeartbeat) and acquires 0-9 (delivery 1); it keeps 0 acquired, so the window's
  head stays and every other settlement is written in a state;
- it accepts 1-3, rejects 4-5 and releases 6-9, which come back (delivery 2);
- it accepts 6-7 and releases 8-9: at the limit they are archived;
- it accepts 0: that write carries start 0 with 0 ACKNOWLEDGED and the final states of 1-9 (Kafka's
  SharePartition writes the start as it was before the acknowledgement), the start moves to 10 once
  written; m1 leaves;
- m2 acquires 10-14 and closes its session releasing them: 5 records in flight, delivered once.
A second group (no limit set) has o1 join, as a fetch needs an initialized share-partition, read all 15
from the earliest and accept them in one acknowledgement at the head: written ACKNOWLEDGED with start 0,
its last persisted start.
"""

from __future__ import annotations

import pytest

from protocol.api_keys import ApiKey
from protocol.messages import ShareGroupHeartbeatRequest
from spark_jobs.decode import decode_rows
from tests.conftest import STOP_TIMEOUT_S, local_server
from tests.server.admin_wire import produce
from tests.server.conftest import KafkaWire
from tests.server.test_group_configs import SET, alter
from tests.server.test_share_wire import ACCEPT, REJECT, RELEASE, acquired, create, join, share_ack, share_fetch

pytestmark = [pytest.mark.spark]

GROUP, OTHER_GROUP = "share-report", "share-report-other"


def _heartbeat(wire: KafkaWire, member: str, epoch: int, topics: list[str] | None = None) -> int:
    answer = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=GROUP, member_id=member, member_epoch=epoch, subscribed_topic_names=topics))
    assert answer.error_code == 0
    return answer.member_epoch


@pytest.fixture(scope="module")
def share_log(tmp_path_factory):
    work = tmp_path_factory.mktemp("share-report")
    server = local_server(work).start()
    try:
        server.wait_ready()
        wire = KafkaWire(server.host, server.port)
        try:
            name, topic_id = create(wire)
            assert alter(wire, GROUP, ("share.delivery.count.limit", SET, "2"),
                         ("share.auto.offset.reset", SET, "earliest")) == (0, None)
            _heartbeat(wire, "m1", 0, [name])
            produce(wire, name, 0, 10)
            assert acquired(share_fetch(wire, GROUP, "m1", 0, topic_id)) == [(0, 9, 1)]
            again = share_fetch(wire, GROUP, "m1", 1, topic_id,
                                acks=[(1, 3, ACCEPT), (4, 5, REJECT), (6, 9, RELEASE)])
            assert acquired(again) == [(6, 9, 2)]
            last = share_fetch(wire, GROUP, "m1", 2, topic_id, acks=[(6, 7, ACCEPT), (8, 9, RELEASE)])
            assert last.responses[0].partitions[0].acknowledge_error_code == 0 and acquired(last) == []
            accepted = share_ack(wire, GROUP, "m1", 3, topic_id, [(0, 0, ACCEPT)])
            assert accepted.responses[0].partitions[0].error_code == 0
            assert _heartbeat(wire, "m1", -1) == -1
            produce(wire, name, 0, 5)
            assert acquired(share_fetch(wire, GROUP, "m2", 0, topic_id)) == [(10, 14, 1)]
            closed = share_ack(wire, GROUP, "m2", -1, topic_id, [(10, 11, RELEASE)])
            assert closed.error_code == 0
            assert alter(wire, OTHER_GROUP, ("share.auto.offset.reset", SET, "earliest")) == (0, None)
            join(wire, OTHER_GROUP, "o1", name)
            assert acquired(share_fetch(wire, OTHER_GROUP, "o1", 0, topic_id)) == [(0, 14, 1)]
            assert share_ack(wire, OTHER_GROUP, "o1", 1, topic_id, [(0, 14, ACCEPT)]).error_code == 0
        finally:
            wire.close()
    finally:
        assert server.stop(STOP_TIMEOUT_S) == 0
    return work, server.data_dir, str(topic_id), name


@pytest.fixture(scope="module")
def report(share_log, spark_session):
    from spark_jobs.group_history import build_report

    work, data_dir, *_topic = share_log
    return build_report(spark_session, data_dir, work / "out")


def test_share_partition_figures_are_the_scenario(share_log, report) -> None:
    _work, _data, topic_id, name = share_log
    share = report["share_groups"]
    partition, other = share["partitions"]
    assert (partition["group_id"], partition["topic_id"], partition["topic"], partition["partition"]) == (
        GROUP, topic_id, name, 0)
    expected = {"deliveries": 1 + 3 + 2 + 4 * 2 + 5, "first_deliveries": 15, "redeliveries": 4,
                "accepted": 6, "archived": 4, "archived_first_delivery": 2, "archived_redelivered": 2,
                "rejected": 2, "archived_at_limit": 2, "settled_unseen": 0, "in_flight": 5, "discarded": 0,
                "delivery_count_limit": 2, "start_offset": 10, "state_epochs": [0]}
    assert {k: partition[k] for k in expected} == expected
    assert [start for _ms, start, _epoch in partition["start_offsets"]] == [0, 10]
    assert share["groups"] == 2 and share["share_partitions"] == 2
    assert (other["group_id"], other["delivery_count_limit"], other["start_offset"]) == (OTHER_GROUP, None, 0)
    assert {k: other[k] for k in ("deliveries", "first_deliveries", "redeliveries", "accepted", "settled_unseen",
                                  "in_flight")} == {"deliveries": 15, "first_deliveries": 15, "redeliveries": 0,
                                                    "accepted": 15, "settled_unseen": 0, "in_flight": 0}
    assert (share["deliveries"], share["settled_unseen"]) == (19 + 15, 0)


def test_members_and_epochs_come_from_the_group_records(share_log, report) -> None:
    _work, data_dir, *_topic = share_log
    rows = list(decode_rows(data_dir))
    def bumps_of(group_id: str) -> int:
        return sum(r["kind"] == "share_group_metadata" and not r["tombstone"] and r["group_id"] == group_id
                   for r in rows)

    bumps = bumps_of(GROUP)
    group = report["share_groups"]["per_group"][GROUP]
    assert (group["joined"], group["left"], group["epoch_bumps"]) == (1, 1, bumps)
    assert bumps >= 2  # the join and the leave
    assert group["deliveries"] == 19
    other = report["share_groups"]["per_group"][OTHER_GROUP]
    assert (other["joined"], other["left"], other["epoch_bumps"], other["deliveries"]) == (
        1, 0, bumps_of(OTHER_GROUP), 15)
    assert bumps_of(OTHER_GROUP) >= 1  # the join


def test_the_page_has_the_share_section(share_log, report) -> None:
    work, _data, *_topic = share_log
    page = (work / "out" / "report.html").read_text()
    assert 'id="share-groups"' in page and 'id="share-partitions-table"' in page
    assert f"<td>{GROUP}</td>" in page and 'id="chart-share-start-0"' in page


def test_the_tables_are_written_beside_the_views(share_log, report, spark_session) -> None:
    work, _data, *_topic = share_log
    [row] = spark_session.read.parquet(str(work / "out" / "share_partitions")).filter(f"group_id = '{GROUP}'").collect()
    assert (row.group_id, row.deliveries, row.accepted, row.archived_at_limit) == (GROUP, 19, 6, 2)
    starts = (spark_session.read.parquet(str(work / "out" / "share_start_offsets"))
              .filter(f"group_id = '{GROUP}'").orderBy("write_ms").collect())
    assert [(r.start_offset, r.state_epoch) for r in starts] == [(0, 0), (10, 0)]
