"""The `simple` share group assignor (Kafka's SimpleAssignor): every partition of a subscribed
topic goes to at least one of its subscribers; members may share a partition.

Per topic, with its subscribers sorted by id: when they outnumber its partitions, subscriber k
gets partition k % P (several members per partition); otherwise partition j goes to subscriber
j % M. Deterministic; only the invariants (docs/spec/share-groups.md#assignor) are promised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.core.share.model import Assignment, TopicId


def assign(subscriptions: Mapping[str, Sequence[str]],
           topics: Mapping[str, tuple[TopicId, int]]) -> dict[str, Assignment]:
    """member id -> its subscribed names; topic name -> (id, partition count). Returns targets."""
    targets: dict[str, dict[TopicId, set[int]]] = {member: {} for member in subscriptions}
    for name in sorted({n for names in subscriptions.values() for n in names}):
        if name not in topics:
            continue
        topic_id, count = topics[name]
        subscribers = sorted(m for m, names in subscriptions.items() if name in names)
        if count <= 0 or not subscribers:
            continue
        if len(subscribers) >= count:
            pairs = [(member, k % count) for k, member in enumerate(subscribers)]
        else:
            pairs = [(subscribers[j % len(subscribers)], j) for j in range(count)]
        for member, partition in pairs:
            targets[member].setdefault(topic_id, set()).add(partition)
    return {member: {t: frozenset(p) for t, p in assigned.items()} for member, assigned in targets.items()}
