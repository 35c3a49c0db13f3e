"""The share-partition fold of spark_jobs/share_groups.py on state sequences the wire scenario of
test_share_groups_report.py does not write: ShareUpdate records (Kafka's share coordinator writes
them; groupcoord writes snapshots only), a new state epoch, a tombstone, an unknown delivery limit,
and the start offset jumping past offsets no state showed."""

from __future__ import annotations

from coordinator.records.share_state import PersistedBatch as B
from spark_jobs.share_groups import ACKNOWLEDGED, ARCHIVED, AVAILABLE, StateRecord, _thinned, fold_share_partitions

GROUP, TOPIC = "g", "t"


def snapshot(ts: int, start: int, *batches: B, epoch: int = 0) -> StateRecord:
    return StateRecord(0, ts, ts, GROUP, TOPIC, 0, False, False, epoch, start, batches)


def update(ts: int, start: int, *batches: B) -> StateRecord:
    return StateRecord(0, ts, ts, GROUP, TOPIC, 0, False, True, -1, start, batches)


def tombstone(ts: int) -> StateRecord:
    return StateRecord(0, ts, ts, GROUP, TOPIC, 0, True)


def fold(*records: StateRecord, limit: int | None = None) -> dict:
    [row] = fold_share_partitions(records, {GROUP: limit} if limit is not None else {})
    return row


def test_updates_apply_over_the_snapshot_before_them() -> None:
    row = fold(snapshot(1, 0, B(0, 4, AVAILABLE, 1)),
               update(2, -1, B(2, 2, ACKNOWLEDGED, 2), B(3, 3, ARCHIVED, 3)),
               update(3, 5))  # start 5: 0, 1 and 4 settled at the head, each after one more delivery
    assert (row["accepted"], row["archived"], row["settled_unseen"], row["in_flight"]) == (1, 1, 3, 0)
    assert row["deliveries"] == 2 + 3 + 3 * 2 and row["first_deliveries"] == 5
    assert [s for _ms, s, _e in row["start_offsets"]] == [0, 5]


def test_a_new_state_epoch_discards_the_window() -> None:
    row = fold(snapshot(1, 0, B(0, 2, AVAILABLE, 1), B(3, 3, ACKNOWLEDGED, 1)),
               snapshot(2, 50, epoch=1), snapshot(3, 50, B(50, 50, AVAILABLE, 1), epoch=1))
    assert (row["discarded"], row["accepted"], row["in_flight"], row["settled_unseen"]) == (3, 1, 1, 0)
    assert row["state_epochs"] == [0, 1] and row["start_offsets"] == [[1, 0, 0], [2, 50, 1]]


def test_a_tombstone_ends_the_share_partition_and_a_snapshot_starts_it_again() -> None:
    row = fold(snapshot(1, 0, B(0, 1, AVAILABLE, 2)), tombstone(2), snapshot(3, 7))
    assert (row["discarded"], row["deliveries"], row["redeliveries"], row["settled_unseen"]) == (2, 4, 2, 0)
    assert [s for _ms, s, _e in row["start_offsets"]] == [0, 7]


def test_archived_without_a_known_limit_only_says_rejected_at_the_first_delivery() -> None:
    states = (snapshot(1, 0, B(0, 0, AVAILABLE, 0), B(1, 1, ARCHIVED, 1), B(2, 2, ARCHIVED, 3)),)
    unknown = fold(*states)
    assert (unknown["rejected"], unknown["archived_at_limit"], unknown["archived_redelivered"]) == (1, 0, 1)
    known = fold(*states, limit=3)
    assert (known["rejected"], known["archived_at_limit"], known["delivery_count_limit"]) == (1, 1, 3)


def test_a_start_past_the_window_counts_the_offsets_no_state_showed_as_delivered_once() -> None:
    row = fold(snapshot(1, 0, B(0, 0, AVAILABLE, 1)), snapshot(2, 4))
    assert (row["settled_unseen"], row["deliveries"], row["first_deliveries"], row["redeliveries"]) == (4, 5, 4, 1)


def test_the_summary_keeps_an_even_spread_of_a_long_start_offset_series() -> None:
    points = list(range(1000))
    thinned = _thinned(points, 10)
    assert len(thinned) == 10 and thinned[0] == 0 and thinned[-1] == 999 and thinned == sorted(thinned)
    assert _thinned(points[:5], 10) == points[:5]
