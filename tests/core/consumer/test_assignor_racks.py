"""Rack-aware `uniform` and `range` (docs/spec/consumer-protocol.md#racks): the promises as properties.

- the contract of every assignor holds with racks too (every partition once, to a subscriber);
- balance is never worse than without racks: homogeneous uniform within one partition, range with
  the same per-topic quotas, heterogeneous uniform no worse than the rack-less run;
- a partition lands off its replicas' racks only when every member on those racks is full;
- on a single node (every partition on the same racks, or racks unknown) nothing changes;
- equal inputs give equal outputs, whatever the member order.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.core.assignors import (
    RANGE,
    UNIFORM,
    UNKNOWN_RACKS,
    GroupAssignment,
    MemberSpec,
    PartitionRacks,
    rack_aware,
)

TOPICS = ["t0", "t1", "t2", "t3"]
RACKS = ["a", "b", "c"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Topics = dict[str, int]
Members = dict[str, MemberSpec]


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool | None = None) -> tuple[Members, Topics, PartitionRacks]:
    topics = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1))
    by_topic = {t: tuple(frozenset(draw(st.sets(st.sampled_from(RACKS), max_size=2))) for _ in range(n))
                for t, n in topics.items()}
    count = draw(st.integers(1, 7))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    everything = frozenset(topics)
    members: Members = {}
    for i in range(count):
        subscription = everything if homogeneous else frozenset(
            draw(st.sets(st.sampled_from(sorted(topics)), min_size=1)))
        rack = draw(st.sampled_from([None, *RACKS]))
        current = {}
        if draw(st.booleans()):  # a current target, as a previous run (maybe of another group shape) left
            for t in sorted(subscription):
                current[t] = frozenset(draw(st.sets(st.integers(0, topics[t] - 1), max_size=4))) \
                    if topics[t] else frozenset()
        members[f"m{i}"] = MemberSpec(subscription, rack, None, current)
    # no partition claimed twice: the first claimant keeps it
    claimed: set[tuple[str, int]] = set()
    for member_id, spec in list(members.items()):
        mine = {}
        for t, ps in spec.current.items():
            free = frozenset(p for p in ps if (t, p) not in claimed)
            claimed.update((t, p) for p in free)
            if free:
                mine[t] = free
        members[member_id] = MemberSpec(spec.subscribed_topic_ids, spec.rack, None, mine)
    return members, topics, PartitionRacks(by_topic)


def check_contract(members: Members, topics: Topics, result: GroupAssignment) -> None:
    assert set(result) == set(members)
    owners: Counter[tuple[str, int]] = Counter()
    for member_id, assignment in result.items():
        for t, ps in assignment.items():
            assert t in members[member_id].subscribed_topic_ids and ps
            owners.update((t, p) for p in ps)
    expected = {(t, p) for spec in members.values() for t in spec.subscribed_topic_ids for p in range(topics[t])}
    assert set(owners) == expected and all(n == 1 for n in owners.values())


def loads(result: GroupAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.items()}


def off_rack_only_when_the_rack_is_full(members: Members, topics: Topics, racks: PartitionRacks,
                                        result: GroupAssignment) -> None:
    """Homogeneous uniform: a partition off its racks means every member on them holds its floor share."""
    load = loads(result)
    floor = sum(topics.values()) // len(members)
    for member_id, assignment in result.items():
        rack = members[member_id].rack
        for t, ps in assignment.items():
            for p in ps:
                on = racks.of(t, p)
                if rack is not None and rack not in on:
                    assert all(load[m] >= floor for m, spec in members.items() if spec.rack in on), (t, p, member_id)


def heterogeneous_imbalance(members: Members, result: GroupAssignment) -> int:
    """The uniform assignor's promise, as a number: the largest gap between a subscriber holding a
    topic's partition and another subscriber of that topic."""
    load = loads(result)
    worst = 0
    for t in {t for spec in members.values() for t in spec.subscribed_topic_ids}:
        subscribers = [m for m, spec in members.items() if t in spec.subscribed_topic_ids]
        holders = [m for m in subscribers if result[m].get(t)]
        if holders:
            worst = max(worst, max(load[m] for m in holders) - min(load[m] for m in subscribers))
    return worst


@SETTINGS
@given(groups(homogeneous=True))
def test_homogeneous_uniform_is_exactly_as_balanced_and_off_rack_only_when_full(group) -> None:
    members, topics, racks = group
    result = UNIFORM.assign(members, topics, racks)
    check_contract(members, topics, result)
    spread = loads(result).values()
    assert max(spread) - min(spread) <= 1
    if rack_aware([s.rack for s in members.values()], (racks.of(t, p) for t in topics for p in range(topics[t]))):
        off_rack_only_when_the_rack_is_full(members, topics, racks, result)


@SETTINGS
@given(groups(homogeneous=False))
def test_heterogeneous_uniform_is_never_less_balanced_than_without_racks(group) -> None:
    members, topics, racks = group
    result = UNIFORM.assign(members, topics, racks)
    check_contract(members, topics, result)
    plain = UNIFORM.assign(members, topics)
    assert heterogeneous_imbalance(members, result) <= max(heterogeneous_imbalance(members, plain), 1)


@SETTINGS
@given(groups())
def test_range_keeps_its_quotas_with_racks(group) -> None:
    members, topics, racks = group
    result = RANGE.assign(members, topics, racks)
    check_contract(members, topics, result)
    plain = RANGE.assign(members, topics)
    for t in topics:
        with_racks = sorted(len(result[m].get(t, ())) for m, s in members.items() if t in s.subscribed_topic_ids)
        without = sorted(len(plain[m].get(t, ())) for m, s in members.items() if t in s.subscribed_topic_ids)
        assert with_racks == without, t


@SETTINGS
@given(groups(), st.sampled_from([frozenset(), frozenset({"a"}), frozenset({"a", "b"})]))
def test_a_single_node_changes_nothing(group, node_racks) -> None:
    # every partition on the same racks: every member is as close to every partition
    members, topics, _ = group
    same = PartitionRacks({t: (node_racks,) * n for t, n in topics.items()})
    for assignor in (UNIFORM, RANGE):
        assert assignor.assign(members, topics, same) == assignor.assign(members, topics, UNKNOWN_RACKS)


@SETTINGS
@given(groups(), st.randoms(use_true_random=False))
def test_equal_inputs_give_equal_outputs_in_any_member_order(group, rnd) -> None:
    members, topics, racks = group
    shuffled = list(members.items())
    rnd.shuffle(shuffled)
    for assignor in (UNIFORM, RANGE):
        assert assignor.assign(dict(shuffled), topics, racks) == assignor.assign(members, topics, racks)


def test_members_get_the_partitions_on_their_racks_when_balance_allows() -> None:
    # 6 partitions, replicas alternating between racks a and b; two members, one per rack
    members = {"m0": MemberSpec(frozenset({"t"}), "b"), "m1": MemberSpec(frozenset({"t"}), "a")}
    racks = PartitionRacks({"t": tuple(frozenset({"a" if p % 2 == 0 else "b"}) for p in range(6))})
    for assignor in (UNIFORM, RANGE):
        result = assignor.assign(members, {"t": 6}, racks)
        assert result == {"m0": {"t": frozenset({1, 3, 5})}, "m1": {"t": frozenset({0, 2, 4})}}, assignor.name
    # without racks, range gives contiguous ranges and uniform hands out in member order
    assert RANGE.assign(members, {"t": 6}) == {"m0": {"t": frozenset({0, 1, 2})}, "m1": {"t": frozenset({3, 4, 5})}}


def test_a_member_moves_off_a_partition_that_left_its_rack_and_others_stay() -> None:
    # m0 (rack a) holds 0-2; partition 2 is now on rack b only, where m1 is
    members = {"m0": MemberSpec(frozenset({"t"}), "a", None, {"t": frozenset({0, 1, 2})}),
               "m1": MemberSpec(frozenset({"t"}), "b", None, {"t": frozenset({3})})}
    racks = PartitionRacks({"t": (frozenset({"a"}), frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"}))})
    assert UNIFORM.assign(members, {"t": 4}, racks) == {"m0": {"t": frozenset({0, 1})},
                                                         "m1": {"t": frozenset({2, 3})}}


def test_co_partitioned_topics_stay_joined_with_racks() -> None:
    # range: partition p of both topics goes to one member, the one on p's rack
    members = {"m0": MemberSpec(frozenset({"x", "y"}), "a"), "m1": MemberSpec(frozenset({"x", "y"}), "b")}
    on = tuple(frozenset({"b" if p < 2 else "a"}) for p in range(4))
    result = RANGE.assign(members, {"x": 4, "y": 4}, PartitionRacks({"x": on, "y": on}))
    assert result == {"m0": {"x": frozenset({2, 3}), "y": frozenset({2, 3})},
                      "m1": {"x": frozenset({0, 1}), "y": frozenset({0, 1})}}
