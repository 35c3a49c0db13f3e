"""The report's consumer-protocol section and its left/removed/expired counts, over a generated log
whose groups (a quarter of them KIP-848, some mixed) write what the server writes, cause records
included. The counts are checked against the log decoded record by record, without Spark."""

from __future__ import annotations

from collections import Counter

import pytest

from spark_jobs.consumer_groups import CONSUMER_KINDS, EVENT_OF_CAUSE
from spark_jobs.decode import decode_rows
from spark_jobs.generate import generate

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def generated(tmp_path_factory, spark_session):
    from spark_jobs.group_history import build_report

    work = tmp_path_factory.mktemp("consumer-report")
    generate(work / "data", 60_000, groups=40, partitions=4, seed=20, workers=1)
    summary = build_report(spark_session, work / "data", work / "out")
    return work, summary, list(decode_rows(work / "data"))


def test_consumer_group_figures_match_the_records(generated) -> None:
    _work, summary, rows = generated
    consumer_groups = {r["group_id"] for r in rows if r["kind"] in CONSUMER_KINDS}
    assert consumer_groups, "the generator writes consumer-protocol groups"
    live = [r for r in rows if not r["tombstone"]]
    causes = Counter(EVENT_OF_CAUSE[r["reason_cause"]] for r in live if r["kind"] == "group_reason"
                     and r["group_id"] in consumer_groups and r["reason_cause"] in EVENT_OF_CAUSE)
    cg = summary["consumer_groups"]
    assert cg["groups"] == len(consumer_groups)
    assert (cg["left"], cg["removed"], cg["expired"], cg["static_replaced"]) == (
        causes["left"], causes["removed"], causes["expired"], causes["static_replaced"])
    assert cg["left"] and cg["expired"] and cg["static_replaced"]
    assert cg["epoch_bumps"] == sum(r["kind"] == "consumer_group_metadata" for r in live)
    assert cg["assignor_runs"] == sum(r["kind"] == "consumer_group_target_assignment_metadata" for r in live)
    # several joins within a moment share one run (KIP-1263): more epochs than runs
    assert cg["epochs_per_run"] > 1
    assert cg["mixed_groups"] >= 1
    assert cg["reconcile_ms"]["count"] > 0 and 0 <= cg["reconcile_ms"]["p50"] <= cg["reconcile_ms"]["max"] <= 3000
    assert cg["regex_resolutions"] == sum(r["kind"] == "consumer_group_regular_expression" for r in live)


def test_classic_left_removed_expired_come_from_the_cause_records(generated, spark_session) -> None:
    work, summary, rows = generated
    consumer_groups = {r["group_id"] for r in rows if r["kind"] in CONSUMER_KINDS}
    causes = Counter(r["reason_cause"] for r in rows if r["kind"] == "group_reason" and not r["tombstone"]
                     and r["group_id"] not in consumer_groups)
    assert causes["left"] and causes["removed"] and causes["session_expired"]
    timeline = spark_session.read.parquet(str(work / "out" / "rebalance_timeline")).collect()
    counted = Counter()
    for r in timeline:
        counted["left"] += len(r.left or ())
        counted["removed"] += len(r.removed or ())
        counted["session_expired"] += len(r.expired or ())
    # every removal the generator wrote is in a completed rebalance, except those of a group's last
    # generation still open at the end of the log
    for cause in ("left", "removed", "session_expired"):
        assert 0 < causes[cause] - counted[cause] <= 40 or causes[cause] == counted[cause], (cause, causes, counted)
    assert summary["membership"].get("removed", 0) == counted["removed"]


def test_the_page_has_a_section_per_protocol(generated) -> None:
    work, _summary, _rows = generated
    page = (work / "out" / "report.html").read_text()
    assert 'id="classic-protocol"' in page and 'id="consumer-protocol"' in page
    assert 'id="chart-consumer-epochs"' in page
