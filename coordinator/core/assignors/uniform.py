"""The `uniform` server-side assignor (the default): balance first, then stickiness.

Behaviour (docs/spec/consumer-protocol.md#uniform-assignor; Kafka's UniformAssignor with its homogeneous and
heterogeneous builders):

Homogeneous subscriptions (everyone subscribes to the same topics). P partitions over N members:
every member gets P // N or P // N + 1, exactly P mod N members the larger share. Each member
keeps as much of its current target as fits its share; partitions of topics it no longer
subscribes to (or that no longer exist) are dropped, partitions over its share are released, and
released and new partitions go to members below their share.
  Unlike Kafka, which hands the P mod N larger shares out in member iteration order, the larger
  shares go first to members that already hold more than P // N, so fewer partitions move.

Heterogeneous subscriptions. Each member keeps every partition of its current target that it
still subscribes to. Unassigned partitions go to the least-loaded subscribers, topics taken in
descending partitions-per-subscriber order (ties: fewer subscribers first, then topic id). Then
at most 16 balancing passes move partitions of each topic from its most- to its least-loaded
subscribers until no topic has a subscriber holding one of its partitions with two more
partitions in total than another subscriber. Exact balance is not always possible with differing
subscriptions.
  Unlike Kafka, topics with exactly the same subscribers are handed out and balanced as one unit
  (ordered by the unit's partitions per subscriber), which is what makes 1,000-topic groups cheap
  in Python; the promises above are the same.

Racks (Kafka's rack-aware uniform builders of KAFKA-14515/15484, removed from the built-in
assignors by KAFKA-16694 and kept here for clusters): used only when `rack_aware` says so over
the subscribed partitions, which is never the case on a single node (every partition has the
same racks), where the result is exactly the rack-less one. When used:
- a member with a rack keeps only the partitions of its current target that have a replica on
  its rack; the others are freed, their owner remembered;
- the shares, hence the balance, are computed exactly as without racks, from what is kept;
- free partitions go first to receivers on one of their replicas' racks (partitions with the
  fewest members on their racks first, then topic and partition; among receivers the least
  loaded, then member order), then back to their previous owner while it has room, then in
  member order as without racks;
- heterogeneous balancing moves a donor's off-rack partitions first and places what it moves
  the same way.
A member without a rack matches every partition.

Determinism: members are numbered in member-id order, topics are taken in topic-id order, and
ties always break on those numbers, so equal inputs give equal outputs in any process.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import accumulate

from coordinator.core.assignors import (
    UNKNOWN_RACKS,
    GroupAssignment,
    MemberAssignment,
    MemberId,
    MemberSpec,
    PartitionAssignorError,
    PartitionRacks,
    SubscriptionType,
    TopicId,
    partition_counts,
    rack_aware,
    subscription_type,
    topics_by_subscribers,
)

NAME = "uniform"

# Kafka's limit on heterogeneous balancing passes. Topics whose subscribers share the same
# subscriptions balance in one pass; overlapping ones roughly halve their imbalance per pass.
MAX_BALANCING_PASSES = 16

# Free partitions waiting to be handed out: (topic, partition numbers ascending), topics ascending.
Pool = list[tuple[TopicId, Sequence[int]]]


def assign(members: Mapping[MemberId, MemberSpec], topics: Mapping[TopicId, int],
           racks: PartitionRacks = UNKNOWN_RACKS) -> GroupAssignment:
    """The new target assignment of every member; see the module docstring."""
    member_ids = sorted(members)
    specs = [members[member_id] for member_id in member_ids]
    if subscription_type(members) is SubscriptionType.HOMOGENEOUS:
        assignments = _assign_homogeneous(specs, topics, racks)
    else:
        assignments = _assign_heterogeneous(specs, topics, racks)
    return dict(zip(member_ids, assignments, strict=False))


# --- racks -------------------------------------------------------------------------------------

class _Racks:
    """The racks of a run that uses them (see `_rack_view`)."""

    __slots__ = ("member_racks", "members_in_rack", "partition_racks", "previous_owner")

    def __init__(self, member_racks: list[str | None], partition_racks: PartitionRacks) -> None:
        self.member_racks = member_racks
        self.partition_racks = partition_racks
        self.members_in_rack = Counter(rack for rack in member_racks if rack is not None)
        self.previous_owner: dict[tuple[TopicId, int], int] = {}  # freed off-rack partitions

    def matches(self, index: int, topic_id: TopicId, partition: int) -> bool:
        rack = self.member_racks[index]
        return rack is None or rack in self.partition_racks.of(topic_id, partition)


def _rack_view(specs: list[MemberSpec], counts: Mapping[TopicId, int], racks: PartitionRacks) -> _Racks | None:
    if not racks.by_topic:
        return None
    member_racks = [spec.rack or None for spec in specs]
    every_partition = (racks.of(topic_id, p) for topic_id in sorted(counts) for p in range(counts[topic_id]))
    if not rack_aware(member_racks, every_partition):
        return None
    return _Racks(member_racks, racks)


def _free_off_rack(kept: list[MemberAssignment], loads: list[int], free: dict[TopicId, Sequence[int]],
                   racks: _Racks) -> None:
    """Frees the kept partitions without a replica on their holder's rack, remembering the holder."""
    freed: dict[TopicId, list[int]] = {}
    for index, assignment in enumerate(kept):
        if racks.member_racks[index] is None:
            continue
        for topic_id in sorted(assignment):
            partitions = assignment[topic_id]
            remote = [p for p in partitions if not racks.matches(index, topic_id, p)]
            if remote:
                _replace(assignment, loads, index, topic_id, partitions.difference(remote))
                freed.setdefault(topic_id, []).extend(remote)
                for partition in remote:
                    racks.previous_owner[(topic_id, partition)] = index
    for topic_id, freed_partitions in freed.items():
        freed_partitions.extend(free.get(topic_id, ()))
        freed_partitions.sort()
        free[topic_id] = freed_partitions


def _distribute(pool: Pool, receivers: list[tuple[int, int]], kept: list[MemberAssignment], loads: list[int],
                racks: _Racks | None) -> None:
    """Gives each (member, count) receiver `count` partitions of the pool: in pool order without
    racks (`_hand_out`), rack first with them (`_place_on_racks`)."""
    if racks is None:
        _hand_out(pool, receivers, kept, loads)
    else:
        _place_on_racks(pool, receivers, kept, loads, racks)


def _place_on_racks(pool: Pool, receivers: list[tuple[int, int]], kept: list[MemberAssignment], loads: list[int],
                    racks: _Racks) -> None:
    """Kafka's rackAwarePartitionAssignment, then the previous owners, then the rest in member order."""
    need = dict(receivers)
    heaps: dict[str, list[tuple[int, int]]] = {}  # rack -> (load, member) of receivers with room
    for index, count in receivers:
        rack = racks.member_racks[index]
        if rack is not None and count:
            heaps.setdefault(rack, []).append((loads[index], index))
    for heap in heaps.values():
        heapq.heapify(heap)
    gained: dict[int, dict[TopicId, list[int]]] = {}
    leftovers: list[tuple[TopicId, int]] = []
    ordered: list[tuple[int, TopicId, int]] = []
    for topic_id, partitions in pool:
        for partition in partitions:
            on_racks = sum(racks.members_in_rack.get(rack, 0)
                           for rack in racks.partition_racks.of(topic_id, partition))
            if on_racks:
                ordered.append((on_racks, topic_id, partition))
            else:
                leftovers.append((topic_id, partition))
    ordered.sort()
    for _, topic_id, partition in ordered:
        best: list[tuple[int, int]] | None = None
        for rack in racks.partition_racks.of(topic_id, partition):
            candidate = heaps.get(rack)
            if candidate and (best is None or candidate[0] < best[0]):
                best = candidate
        if best is None:
            leftovers.append((topic_id, partition))
            continue
        load, index = heapq.heappop(best)
        gained.setdefault(index, {}).setdefault(topic_id, []).append(partition)
        loads[index] = load + 1
        need[index] -= 1
        if need[index]:
            heapq.heappush(best, (load + 1, index))

    rest: dict[TopicId, list[int]] = {}
    for topic_id, partition in sorted(leftovers):
        owner = racks.previous_owner.get((topic_id, partition))
        if owner is not None and need.get(owner, 0) > 0:
            gained.setdefault(owner, {}).setdefault(topic_id, []).append(partition)
            loads[owner] += 1
            need[owner] -= 1
        else:
            rest.setdefault(topic_id, []).append(partition)
    for index, topics_gained in gained.items():
        mine = kept[index]
        for topic_id, partitions in topics_gained.items():
            held = mine.get(topic_id)
            mine[topic_id] = frozenset(partitions) if held is None else held.union(partitions)
    _hand_out(list(rest.items()), [(index, need[index]) for index, _ in receivers if need[index]], kept, loads)


def _take_for_balance(assignment: MemberAssignment, index: int, amount: int, among: frozenset[TopicId],
                      racks: _Racks | None) -> Pool:
    """`_take_highest`, except that with racks the donor's off-rack partitions go first."""
    if racks is None:
        return _take_highest(assignment, amount, among)
    candidates = sorted(((not racks.matches(index, topic_id, p), topic_id, p)
                         for topic_id in assignment if topic_id in among for p in assignment[topic_id]),
                        reverse=True)[:amount]
    taken: dict[TopicId, list[int]] = {}
    for _, topic_id, partition in candidates:
        taken.setdefault(topic_id, []).append(partition)
    for topic_id, partitions in taken.items():
        remaining = assignment[topic_id].difference(partitions)
        if remaining:
            assignment[topic_id] = remaining
        else:
            del assignment[topic_id]
        partitions.sort()
    return sorted(taken.items())


# --- homogeneous -------------------------------------------------------------------------------

def _assign_homogeneous(specs: list[MemberSpec], topics: Mapping[TopicId, int],
                        racks: PartitionRacks) -> list[MemberAssignment]:
    if not specs or not specs[0].subscribed_topic_ids:
        return [{} for _ in specs]
    topic_ids = sorted(specs[0].subscribed_topic_ids)
    counts = partition_counts(topics, topic_ids)
    kept, loads, holders = _kept_current(specs)
    free = _free_partitions(topic_ids, counts, kept, loads, holders)
    rack_view = _rack_view(specs, counts, racks)
    if rack_view is not None:
        _free_off_rack(kept, loads, free, rack_view)

    member_count = len(specs)
    shares = _shares(loads, sum(counts.values()), member_count)

    # Release what is over each member's share, highest topics and partitions first.
    released: dict[TopicId, list[int]] = {}
    for index in range(member_count):
        excess = loads[index] - shares[index]
        if excess > 0:
            for topic_id, partitions in _take_highest(kept[index], excess):
                released.setdefault(topic_id, []).extend(partitions)
            loads[index] = shares[index]
    for topic_id, partitions in released.items():
        partitions.extend(free.get(topic_id, ()))
        partitions.sort()
        free[topic_id] = partitions

    pool = [(topic_id, free[topic_id]) for topic_id in topic_ids if topic_id in free]
    receivers = [(index, shares[index] - loads[index]) for index in range(member_count) if loads[index] < shares[index]]
    _distribute(pool, receivers, kept, loads, rack_view)
    return kept


def _shares(loads: list[int], total: int, member_count: int) -> list[int]:
    """Per-member share: total // N, plus one for total % N members. The plus-ones go first to
    members already holding more than total // N (each keeps one more partition that way), then
    to the others in member order."""
    base, extra = divmod(total, member_count)
    shares = [base] * member_count
    if extra:
        for over_base in (True, False):
            for index, load in enumerate(loads):
                if (load > base) is over_base:
                    shares[index] += 1
                    extra -= 1
                    if not extra:
                        return shares
    return shares


# --- heterogeneous -----------------------------------------------------------------------------

class _TopicGroup:
    """Topics with exactly the same subscribers, handed out and balanced together."""

    __slots__ = ("partition_total", "subscribers", "topic_ids", "topic_set")

    def __init__(self, subscribers: list[int], topic_ids: list[TopicId], counts: Mapping[TopicId, int]) -> None:
        self.subscribers = subscribers
        self.topic_ids = topic_ids
        self.topic_set = frozenset(topic_ids)
        self.partition_total = sum(counts[topic_id] for topic_id in topic_ids)

    def order_key(self) -> tuple[float, int, TopicId]:
        # Kafka's topic order: partitions per subscriber descending, fewer subscribers, topic id.
        return (-self.partition_total / len(self.subscribers), len(self.subscribers), self.topic_ids[0])


def _assign_heterogeneous(specs: list[MemberSpec], topics: Mapping[TopicId, int],
                          racks: PartitionRacks) -> list[MemberAssignment]:
    classes = topics_by_subscribers([spec.subscribed_topic_ids for spec in specs])
    counts = partition_counts(topics, (topic_id for _, topic_ids in classes for topic_id in topic_ids))
    groups = sorted((_TopicGroup(subscribers, topic_ids, counts) for subscribers, topic_ids in classes),
                    key=_TopicGroup.order_key)

    kept, loads, holders = _kept_current(specs)
    free = _free_partitions(sorted(counts), counts, kept, loads, holders)
    rack_view = _rack_view(specs, counts, racks)
    if rack_view is not None:
        _free_off_rack(kept, loads, free, rack_view)

    for group in groups:
        pool = [(topic_id, free[topic_id]) for topic_id in group.topic_ids if topic_id in free]
        if pool:
            free_count = sum(len(partitions) for _, partitions in pool)
            _distribute(pool, _fill_least_loaded(group.subscribers, loads, free_count), kept, loads, rack_view)

    _balance(groups, kept, loads, rack_view)
    return kept


def _fill_least_loaded(subscribers: list[int], loads: list[int], amount: int) -> list[tuple[int, int]]:
    """How many of `amount` new partitions each subscriber receives: water-filling from the
    least loaded up, as Kafka's round robin over the least-loaded range ends up. Returns
    (member, count) in ascending (load, member) order, receivers only."""
    ordered = sorted(subscribers, key=loads.__getitem__)  # stable: ties stay in member order
    ordered_loads = [loads[index] for index in ordered]
    below = list(accumulate(ordered_loads))  # below[j]: total load of the j + 1 least loaded
    # The water reaches member j when raising the j members before it to its load costs at most
    # `amount`; that cost grows with j, so binary-search the last member it reaches.
    low, high = 1, len(ordered)  # the first member is always reached
    while low < high:
        middle = (low + high) // 2
        if ordered_loads[middle] * middle - below[middle - 1] <= amount:
            low = middle + 1
        else:
            high = middle
    raised = low
    level, one_more = divmod(amount + below[raised - 1], raised)
    receivers = []
    for position in range(raised):
        gain = level - ordered_loads[position] + (1 if position < one_more else 0)
        if gain <= 0:
            break  # loads only grow from here and the extra ones are handed out
        receivers.append((ordered[position], gain))
    return receivers


def _balance(groups: list[_TopicGroup], kept: list[MemberAssignment], loads: list[int],
             racks: _Racks | None) -> None:
    """Kafka's final phase: pass over the topic groups until a whole pass moves nothing or
    MAX_BALANCING_PASSES is reached."""
    movable = [group for group in groups if len(group.subscribers) >= 2]
    last_moved = -1
    for _ in range(MAX_BALANCING_PASSES):
        for position, group in enumerate(movable):
            if position == last_moved:
                return  # a full pass since the last move changed nothing
            if _balance_group(group, kept, loads, racks) or last_moved == -1:
                last_moved = position


def _balance_group(group: _TopicGroup, kept: list[MemberAssignment], loads: list[int], racks: _Racks | None) -> int:
    """Moves the group's partitions from its most to its least loaded subscribers until every
    subscriber still holding one of them is at most one above the least loaded. Returns how many
    partitions moved."""
    subscribers = group.subscribers
    subscriber_loads = [loads[index] for index in subscribers]
    if max(subscriber_loads) - min(subscriber_loads) <= 1:
        return 0

    # A subscriber can go down to its load from other topics (its floor), no further.
    topic_set = group.topic_set
    floors = []
    for index, load in zip(subscribers, subscriber_loads, strict=False):
        movable = sum(len(partitions) for topic_id, partitions in kept[index].items() if topic_id in topic_set)
        floors.append(load - movable)
    level, one_more = _balanced_level(floors, sum(subscriber_loads))

    # Final load of each subscriber: its floor if above the level, else the level; the one_more
    # extra partitions go to subscribers above the level first (they then give up one fewer).
    finals = [max(floor, level) for floor in floors]
    for prefer_donors in (True, False):
        for position, (floor, load) in enumerate(zip(floors, subscriber_loads, strict=False)):
            if one_more and floor <= level and finals[position] == level and (load > level) is prefer_donors:
                finals[position] += 1
                one_more -= 1

    donors = [(subscribers[p], subscriber_loads[p] - finals[p]) for p in range(len(subscribers))
              if subscriber_loads[p] > finals[p]]
    receivers = [(subscribers[p], finals[p] - subscriber_loads[p]) for p in range(len(subscribers))
                 if finals[p] > subscriber_loads[p]]
    moved = 0
    pool: Pool = []
    for index, amount in donors:
        pool.extend(_take_for_balance(kept[index], index, amount, topic_set, racks))
        loads[index] -= amount
        moved += amount
    _distribute(pool, receivers, kept, loads, racks)
    return moved


def _balanced_level(floors: list[int], total: int) -> tuple[int, int]:
    """The highest level L with sum(max(floor, L)) <= total, and total minus that sum (how many
    members at L get one more)."""
    ordered = sorted(floors)
    pinned_total = 0  # members ordered[flexible:] stay at their floor
    for flexible in range(len(ordered), 0, -1):
        level = (total - pinned_total) // flexible
        if level >= ordered[flexible - 1]:
            return level, total - pinned_total - level * flexible
        pinned_total += ordered[flexible - 1]
    raise AssertionError("a level always exists: the loads themselves are at or above the floors")


# --- shared steps ------------------------------------------------------------------------------

def _kept_current(
    specs: list[MemberSpec],
) -> tuple[list[MemberAssignment], list[int], dict[TopicId, list[int]]]:
    """Each member's current target cut down to the topics it subscribes to. Returns the kept
    assignments (fresh dicts, shared frozensets), their sizes, and for each topic the members
    holding some of it (ascending). Partition numbers are checked per topic, in
    `_free_partitions`, which is one pass per topic instead of one per member and topic."""
    kept: list[MemberAssignment] = []
    loads: list[int] = []
    holders: dict[TopicId, list[int]] = {}
    for index, spec in enumerate(specs):
        mine: MemberAssignment = {}
        load = 0
        if spec.current:
            subscribed = spec.subscribed_topic_ids
            for topic_id, partitions in spec.current.items():
                if partitions and topic_id in subscribed:
                    if type(partitions) is not frozenset:
                        partitions = frozenset(partitions)  # never hand a caller's mutable set back
                    mine[topic_id] = partitions
                    load += len(partitions)
                    if topic_id in holders:
                        holders[topic_id].append(index)
                    else:
                        holders[topic_id] = [index]
        kept.append(mine)
        loads.append(load)
    return kept, loads, holders


def _free_partitions(
    topic_ids: list[TopicId], counts: Mapping[TopicId, int], kept: list[MemberAssignment],
    loads: list[int], holders: dict[TopicId, list[int]],
) -> dict[TopicId, Sequence[int]]:
    """Partitions nobody keeps, per topic, ascending. Kept partitions that do not exist (the topic
    shrank or the input is corrupt) are dropped; a partition kept by several members (a corrupt
    input) stays with the first of them."""
    free: dict[TopicId, Sequence[int]] = {}
    all_partitions: dict[int, frozenset[int]] = {}  # by partition count, shared between topics
    for topic_id in topic_ids:
        count = counts[topic_id]
        owners = holders.get(topic_id)
        if owners is None:
            if count:
                free[topic_id] = range(count)
            continue
        if len(owners) == 1:
            held = kept[owners[0]][topic_id]
        else:
            owned = [kept[index][topic_id] for index in owners]
            held = frozenset().union(*owned)
            if len(held) < sum(map(len, owned)):
                _drop_duplicates(topic_id, owners, kept, loads)
        existing = all_partitions.get(count)
        if existing is None:
            existing = all_partitions[count] = frozenset(range(count))
        if len(held) == count and held == existing:
            continue  # the common case: every partition kept, all of them real
        missing = existing.difference(held)
        if count - len(missing) < len(held):
            _drop_nonexistent(topic_id, count, owners, kept, loads)
        if missing:
            free[topic_id] = sorted(missing)
    return free


def _drop_duplicates(topic_id: TopicId, owners: list[int], kept: list[MemberAssignment], loads: list[int]) -> None:
    claimed: set[int] = set()
    for index in owners:
        partitions = kept[index].get(topic_id, frozenset())
        unclaimed = partitions.difference(claimed)
        if len(unclaimed) < len(partitions):
            _replace(kept[index], loads, index, topic_id, unclaimed)
        claimed.update(unclaimed)


def _drop_nonexistent(topic_id: TopicId, count: int, owners: list[int], kept: list[MemberAssignment],
                      loads: list[int]) -> None:
    for index in owners:
        partitions = kept[index].get(topic_id, frozenset())
        existing = frozenset(p for p in partitions if 0 <= p < count)
        if len(existing) < len(partitions):
            _replace(kept[index], loads, index, topic_id, existing)


def _replace(assignment: MemberAssignment, loads: list[int], index: int, topic_id: TopicId,
             partitions: frozenset[int]) -> None:
    loads[index] += len(partitions) - len(assignment[topic_id])
    if partitions:
        assignment[topic_id] = partitions
    else:
        del assignment[topic_id]


def _take_highest(assignment: MemberAssignment, amount: int,
                  among: frozenset[TopicId] | None = None) -> Pool:
    """Removes `amount` partitions from `assignment`, highest topic and partition first (only
    topics in `among` when given), and returns them as pool chunks."""
    taken: Pool = []
    topic_ids = sorted((t for t in assignment if among is None or t in among), reverse=True)
    for topic_id in topic_ids:
        partitions = assignment[topic_id]
        if len(partitions) <= amount:
            del assignment[topic_id]
            taken.append((topic_id, sorted(partitions)))
            amount -= len(partitions)
        else:
            ordered = sorted(partitions)
            split = len(ordered) - amount
            assignment[topic_id] = frozenset(ordered[:split])
            taken.append((topic_id, ordered[split:]))
            amount = 0
        if not amount:
            break
    return taken


def _hand_out(pool: Pool, receivers: list[tuple[int, int]], kept: list[MemberAssignment], loads: list[int]) -> None:
    """Gives each (member, count) receiver the next `count` partitions of the pool, in order, so a
    receiver gets contiguous runs of as few topics as possible."""
    chunks = iter(pool)
    topic_id, partitions = next(chunks, ("", ()))
    size = len(partitions)
    offset = 0
    # Slices of untouched topics are ranges; equal ones (every topic's first 50, say) share one
    # frozenset, which is safe because frozensets are immutable.
    pieces_of_ranges: dict[int, frozenset[int]] = {}
    for index, need in receivers:
        mine = kept[index]
        loads[index] += need
        while need:
            take = size - offset
            if not take:
                raise PartitionAssignorError("more partitions owed than free ones (an assignor bug)")
            if need < take:
                take = need
            if type(partitions) is range:
                key = (offset << 32) | take
                piece = pieces_of_ranges.get(key)
                if piece is None:
                    piece = pieces_of_ranges[key] = frozenset(partitions[offset:offset + take])
            else:
                piece = frozenset(partitions[offset:offset + take])
            held = mine.get(topic_id)
            mine[topic_id] = piece if held is None else held | piece
            need -= take
            offset += take
            if offset == size:
                topic_id, partitions = next(chunks, ("", ()))
                size = len(partitions)
                offset = 0
