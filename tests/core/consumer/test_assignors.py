"""Server-side assignors (docs/spec/consumer-protocol.md#target-assignment): the promises as properties, the numbered
cases as examples."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.core.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNOR,
    GroupAssignment,
    MemberSpec,
    PartitionAssignorError,
    SubscriptionType,
    subscription_type,
    uniform,
)
from coordinator.core.assignors import range as range_assignor

TOPICS = ["t0", "t1", "t2", "t3", "t4"]
MEMBERS = [f"m{i}" for i in range(8)]
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Topics = dict[str, int]
Members = dict[str, MemberSpec]


# --- strategies -------------------------------------------------------------------------------

topic_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1)


# Any current assignment, including what a corrupt or stale input could hold: unsubscribed or
# unknown topics, partitions past the end, partitions another member also claims.
arbitrary_current = st.dictionaries(st.sampled_from(TOPICS), st.frozensets(st.integers(0, 14), max_size=5), max_size=2)
instance_ids = st.sampled_from([None, None, "i1", "i2", "i3"])


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool | None = None) -> tuple[Members, Topics]:
    """A group and its topics. Current assignments are arbitrary (possibly invalid)."""
    topics = draw(topic_counts)
    member_ids = draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=7, unique=True))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    subscriptions = st.frozensets(st.sampled_from(sorted(topics)))
    shared = draw(subscriptions)
    return {member_id: MemberSpec(shared if homogeneous else draw(subscriptions), instance_id=draw(instance_ids),
                                  current=draw(arbitrary_current))
            for member_id in member_ids}, topics


def valid_group(members: Members, topics: Topics, assignor_name: str = "uniform") -> Members:
    """The same members carrying a consistent current target: the assignor's own previous run."""
    previous = ASSIGNORS[assignor_name].assign(members, topics)
    return {member_id: with_current(spec, previous[member_id]) for member_id, spec in members.items()}


def with_current(spec: MemberSpec, current: Mapping[str, frozenset[int]]) -> MemberSpec:
    return MemberSpec(spec.subscribed_topic_ids, spec.rack, spec.instance_id, dict(current))


# --- checks shared by the properties ------------------------------------------------------------

def assert_complete_and_exclusive(members: Members, topics: Topics, result: GroupAssignment) -> None:
    """Every partition of a subscribed topic exactly once, to a subscriber; nothing else."""
    assert set(result) == set(members)
    owners: Counter[tuple[str, int]] = Counter()
    for member_id, assignment in result.items():
        for topic_id, partitions in assignment.items():
            assert topic_id in members[member_id].subscribed_topic_ids, (member_id, topic_id)
            assert isinstance(partitions, frozenset) and partitions, (member_id, topic_id)
            owners.update((topic_id, p) for p in partitions)
    subscribed = set().union(*(spec.subscribed_topic_ids for spec in members.values()))
    expected = {(topic_id, p) for topic_id in subscribed for p in range(topics[topic_id])}
    assert set(owners) == expected
    assert all(n == 1 for n in owners.values()), [tp for tp, n in owners.items() if n > 1]


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {member_id: sum(map(len, assignment.values())) for member_id, assignment in result.items()}


def valid_current_size(spec: MemberSpec, topics: Topics) -> int:
    return sum(len(ps) for t, ps in spec.current.items() if t in spec.subscribed_topic_ids
               and all(0 <= p < topics[t] for p in ps))


def kept(spec: MemberSpec, assignment: Mapping[str, frozenset[int]]) -> int:
    return sum(len(ps & assignment.get(t, frozenset())) for t, ps in spec.current.items())


# --- properties: both assignors -----------------------------------------------------------------

@PROPERTY_SETTINGS
@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
def test_every_subscribed_partition_is_assigned_exactly_once_to_a_subscriber(group: tuple[Members, Topics],
                                                                            assignor_name: str) -> None:
    members, topics = group
    assert_complete_and_exclusive(members, topics, ASSIGNORS[assignor_name].assign(members, topics))


@PROPERTY_SETTINGS
@given(groups(), st.sampled_from(sorted(ASSIGNORS)), st.randoms(use_true_random=False))
def test_the_result_does_not_depend_on_input_order(group: tuple[Members, Topics], assignor_name: str,
                                                   rnd: random.Random) -> None:
    members, topics = group
    shuffled_ids = list(members)
    rnd.shuffle(shuffled_ids)
    # Fresh, equal subscription sets per member too: equality, not identity, must decide.
    reordered = {m: MemberSpec(frozenset(sorted(members[m].subscribed_topic_ids, reverse=True)), None,
                               members[m].instance_id, dict(reversed(list(members[m].current.items()))))
                 for m in shuffled_ids}
    assign = ASSIGNORS[assignor_name].assign
    assert assign(reordered, dict(reversed(list(topics.items())))) == assign(members, topics)


@PROPERTY_SETTINGS
@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
def test_running_again_on_its_own_output_changes_nothing(group: tuple[Members, Topics], assignor_name: str) -> None:
    members, topics = group
    assign = ASSIGNORS[assignor_name].assign
    stable = valid_group(members, topics, assignor_name)
    assert assign(stable, topics) == {m: dict(spec.current) for m, spec in stable.items()}


# --- properties: uniform ------------------------------------------------------------------------

@PROPERTY_SETTINGS
@given(groups(homogeneous=True))
def test_uniform_homogeneous_sizes_differ_by_at_most_one(group: tuple[Members, Topics]) -> None:
    members, topics = group
    result = uniform.assign(members, topics)
    total = sum(topics[t] for t in next(iter(members.values())).subscribed_topic_ids)
    base, extra = divmod(total, len(members))
    assert sorted(sizes(result).values()) == [base] * (len(members) - extra) + [base + 1] * extra


@PROPERTY_SETTINGS
@given(groups(homogeneous=True), st.data())
def test_uniform_homogeneous_members_that_stay_keep_all_they_can(group: tuple[Members, Topics],
                                                                 data: st.DataObject) -> None:
    members, topics = group
    stable = valid_group(members, topics)
    # Change the group: some members leave, new ones join, partition counts may grow.
    leaving = data.draw(st.sets(st.sampled_from(sorted(stable)), max_size=len(stable) - 1))
    joining = data.draw(st.sets(st.sampled_from([f"new{i}" for i in range(3)]), max_size=3))
    subscription = next(iter(members.values())).subscribed_topic_ids
    grown = {t: n + data.draw(st.integers(0, 3)) for t, n in topics.items()}
    after = {m: spec for m, spec in stable.items() if m not in leaving}
    after.update({m: MemberSpec(subscription) for m in joining})

    result = uniform.assign(after, grown)
    assert_complete_and_exclusive(after, grown, result)
    base, extra = divmod(sum(grown[t] for t in subscription), len(after))
    share = sizes(result)
    for member_id, spec in after.items():
        # A member keeps as much of what it held as its share allows ...
        assert kept(spec, result[member_id]) == min(valid_current_size(spec, grown), share[member_id])
    # ... and the larger shares went to members that could use them, so nothing else moved.
    over_base = sum(1 for spec in after.values() if valid_current_size(spec, grown) > base)
    best = sum(min(valid_current_size(spec, grown), base) for spec in after.values()) + min(extra, over_base)
    assert sum(kept(spec, result[m]) for m, spec in after.items()) == best


@PROPERTY_SETTINGS
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_leaves_no_partition_with_a_member_two_above_another_subscriber(
        group: tuple[Members, Topics]) -> None:
    members, topics = group
    result = uniform.assign(members, topics)
    load = sizes(result)
    for holder, assignment in result.items():
        for topic_id in assignment:
            for other, spec in members.items():
                if topic_id in spec.subscribed_topic_ids:
                    assert load[holder] <= load[other] + 1, (holder, other, topic_id, load)


@PROPERTY_SETTINGS
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 20)), min_size=1, max_size=4), st.data())
def test_uniform_heterogeneous_disjoint_subscription_groups_are_each_balanced_and_sticky(
        buckets: list[tuple[int, int]], data: st.DataObject) -> None:
    # Kafka's benchmark shape: members fall into buckets, each bucket subscribing to its own topics.
    members: Members = {}
    topics: Topics = {}
    for bucket, (member_count, partitions) in enumerate(buckets):
        topic_ids = frozenset({f"b{bucket}-x", f"b{bucket}-y"})
        topics.update({f"b{bucket}-x": partitions, f"b{bucket}-y": data.draw(st.integers(0, 9))})
        members.update({f"b{bucket}-m{i}": MemberSpec(topic_ids) for i in range(member_count)})
    result = uniform.assign(members, topics)
    assert_complete_and_exclusive(members, topics, result)
    assert_buckets_balanced(len(buckets), result)

    # A member joins one bucket: the others of that bucket only give it partitions, each keeping
    # as much as its new share allows; nothing moves anywhere else.
    joined = data.draw(st.integers(0, len(buckets) - 1))
    after = {m: with_current(spec, result[m]) for m, spec in members.items()}
    after[f"b{joined}-new"] = MemberSpec(frozenset({f"b{joined}-x", f"b{joined}-y"}))
    rebalanced = uniform.assign(after, topics)
    assert_complete_and_exclusive(after, topics, rebalanced)
    assert_buckets_balanced(len(buckets), rebalanced)
    share = sizes(rebalanced)
    for member_id in members:
        assert kept(after[member_id], rebalanced[member_id]) == min(sizes(result)[member_id], share[member_id])
        for topic_id, partitions in rebalanced[member_id].items():
            assert partitions <= result[member_id].get(topic_id, frozenset())


def assert_buckets_balanced(bucket_count: int, result: GroupAssignment) -> None:
    load = sizes(result)
    for bucket in range(bucket_count):
        bucket_loads = [n for m, n in load.items() if m.startswith(f"b{bucket}-")]
        assert max(bucket_loads) - min(bucket_loads) <= 1


# --- properties: range --------------------------------------------------------------------------

@PROPERTY_SETTINGS
@given(groups())
def test_range_gives_each_subscriber_its_contiguous_range_in_static_first_order(group: tuple[Members, Topics]) -> None:
    members, topics = group
    result = range_assignor.assign(members, topics)
    ordered = sorted(members, key=lambda m: (0, members[m].instance_id, m) if members[m].instance_id is not None
                     else (1, m, ""))
    for topic_id, count in topics.items():
        subscribers = [m for m in ordered if topic_id in members[m].subscribed_topic_ids]
        start = 0
        for position, member_id in enumerate(subscribers):
            size = count // len(subscribers) + (1 if position < count % len(subscribers) else 0)
            assert result[member_id].get(topic_id, frozenset()) == frozenset(range(start, start + size))
            start += size


@PROPERTY_SETTINGS
@given(groups(homogeneous=True), st.integers(1, 12))
def test_range_co_partitions_homogeneous_topics_with_equal_counts(group: tuple[Members, Topics], count: int) -> None:
    members, topics = group
    equal = dict.fromkeys(topics, count)
    for assignment in range_assignor.assign(members, equal).values():
        assert len(set(assignment.values())) <= 1


# --- the assignor cases of docs/spec/consumer-protocol.md#cases-assignors, and other examples ---

def test_uniform_three_members_seven_partitions_then_one_leaves_keeps_and_splits_the_freed_ones() -> None:
    """docs/spec/consumer-protocol.md#case-42."""
    t = frozenset({"t"})
    first = uniform.assign({m: MemberSpec(t) for m in ("a", "b", "c")}, {"t": 7})
    assert sorted(sizes(first).values()) == [2, 2, 3]
    assert_complete_and_exclusive({m: MemberSpec(t) for m in first}, {"t": 7}, first)

    for leaver in first:
        remaining = {m: MemberSpec(t, current=first[m]) for m in first if m != leaver}
        second = uniform.assign(remaining, {"t": 7})
        assert sorted(sizes(second).values()) == [3, 4]
        for member_id in remaining:
            assert first[member_id]["t"] <= second[member_id]["t"]


def test_range_orders_static_members_by_instance_id_then_dynamic_members() -> None:
    """docs/spec/consumer-protocol.md#case-43."""
    both = frozenset({"t1", "t2"})
    members = {"m-b": MemberSpec(both, instance_id="b"), "m-a": MemberSpec(both, instance_id="a"),
               "z": MemberSpec(both)}
    assert range_assignor.assign(members, {"t1": 3, "t2": 3}) == {
        "m-a": {"t1": frozenset({0}), "t2": frozenset({0})},
        "m-b": {"t1": frozenset({1}), "t2": frozenset({1})},
        "z": {"t1": frozenset({2}), "t2": frozenset({2})},
    }
    four = range_assignor.assign(members, {"t1": 4, "t2": 4})
    assert four["m-a"] == {"t1": frozenset({0, 1}), "t2": frozenset({0, 1})}
    assert four["m-b"] == {"t1": frozenset({2}), "t2": frozenset({2})}
    assert four["z"] == {"t1": frozenset({3}), "t2": frozenset({3})}


def test_range_single_member_gets_every_partition_of_foo_and_bar() -> None:
    """docs/spec/consumer-protocol.md#case-9 (the assignor's part)."""
    result = range_assignor.assign({"m": MemberSpec(frozenset({"foo", "bar"}))}, {"foo": 6, "bar": 3})
    assert result == {"m": {"foo": frozenset(range(6)), "bar": frozenset(range(3))}}


def test_range_ignores_current_assignments() -> None:
    t = frozenset({"t"})
    fresh = range_assignor.assign({"a": MemberSpec(t), "b": MemberSpec(t)}, {"t": 4})
    swapped = range_assignor.assign({"a": MemberSpec(t, current=fresh["b"]), "b": MemberSpec(t, current=fresh["a"])},
                                    {"t": 4})
    assert swapped == fresh == {"a": {"t": frozenset({0, 1})}, "b": {"t": frozenset({2, 3})}}


def test_uniform_heterogeneous_gives_a_shared_topic_to_the_less_loaded_subscriber() -> None:
    members = {"a": MemberSpec(frozenset({"x"})), "b": MemberSpec(frozenset({"x", "y"})),
               "c": MemberSpec(frozenset({"y"}))}
    result = uniform.assign(members, {"x": 10, "y": 3})
    assert_complete_and_exclusive(members, {"x": 10, "y": 3}, result)
    assert sizes(result) == {"a": 5, "b": 5, "c": 3}
    assert result["c"] == {"y": frozenset({0, 1, 2})}


def test_uniform_heterogeneous_balances_a_newcomer_from_the_most_loaded_holders() -> None:
    x = frozenset({"x"})
    members = {"a": MemberSpec(x, current={"x": frozenset(range(6))}),
               "b": MemberSpec(frozenset({"x", "y"}), current={"x": frozenset(range(6, 12)), "y": frozenset({0, 1})}),
               "c": MemberSpec(frozenset({"x", "z"}))}
    result = uniform.assign(members, {"x": 12, "y": 2, "z": 1})
    assert_complete_and_exclusive(members, {"x": 12, "y": 2, "z": 1}, result)
    assert sizes(result) == {"a": 5, "b": 5, "c": 5}
    assert result["a"]["x"] <= frozenset(range(6)) and result["b"]["y"] == frozenset({0, 1})


def test_uniform_drops_unsubscribed_topics_and_partitions_that_no_longer_exist() -> None:
    members = {"a": MemberSpec(frozenset({"x"}), current={"x": frozenset({0, 1, 7}), "gone": frozenset({0})})}
    assert uniform.assign(members, {"x": 3, "gone": 1}) == {"a": {"x": frozenset({0, 1, 2})}}


def test_uniform_leaves_a_partition_claimed_twice_with_the_first_member() -> None:
    t = frozenset({"t"})
    members = {"a": MemberSpec(t, current={"t": frozenset({0, 1})}), "b": MemberSpec(t, current={"t": frozenset({1})})}
    assert uniform.assign(members, {"t": 4}) == {"a": {"t": frozenset({0, 1})}, "b": {"t": frozenset({2, 3})}}


def test_uniform_never_hands_back_a_callers_mutable_set() -> None:
    t = frozenset({"t"})
    mutable = {0, 1}
    result = uniform.assign({"a": MemberSpec(t, current={"t": mutable})}, {"t": 2})  # type: ignore[dict-item]
    assert result == {"a": {"t": frozenset({0, 1})}} and type(result["a"]["t"]) is frozenset
    mutable.add(5)
    assert result["a"]["t"] == frozenset({0, 1})


def test_nobody_subscribing_is_homogeneous_and_assigns_nothing() -> None:
    members = {"a": MemberSpec(frozenset()), "b": MemberSpec(frozenset())}
    assert subscription_type(members) is SubscriptionType.HOMOGENEOUS
    assert subscription_type({}) is SubscriptionType.HOMOGENEOUS
    for assignor in ASSIGNORS.values():
        assert assignor.assign(members, {"t": 3}) == {"a": {}, "b": {}}
        assert assignor.assign({}, {"t": 3}) == {}


def test_different_subscriptions_are_heterogeneous() -> None:
    members = {"a": MemberSpec(frozenset({"x"})), "b": MemberSpec(frozenset({"x", "y"}))}
    assert subscription_type(members) is SubscriptionType.HETEROGENEOUS


@pytest.mark.parametrize("assignor_name", sorted(ASSIGNORS))
def test_a_subscribed_topic_missing_from_the_metadata_is_an_assignor_error(assignor_name: str) -> None:
    members = {"a": MemberSpec(frozenset({"x", "unknown"})), "b": MemberSpec(frozenset({"x"}))}
    with pytest.raises(PartitionAssignorError):
        ASSIGNORS[assignor_name].assign(members, {"x": 3})


def test_registry_names_uniform_as_the_default_and_range() -> None:
    assert list(ASSIGNORS) == ["uniform", "range"]
    assert DEFAULT_ASSIGNOR is ASSIGNORS["uniform"]
    assert all(assignor.name == name for name, assignor in ASSIGNORS.items())
