"""The `simple` share group assignor (Kafka's SimpleAssignor): every partition of a subscribed
topic goes to at least one of its subscribers; members may share a partition.

Per topic, with its subscribers sorted by id and its assignable (initialized) partitions sorted:
when the subscribers outnumber the P partitions, subscriber k gets the (k % P)-th (several members
per partition); otherwise the j-th partition goes to subscriber j % M. Deterministic; only the
invariants (docs/spec/share-groups.md#assignor) are promised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.core.share.model import Assignment, TopicId


def assign(subscriptions: Mapping[str, Sequence[str]],
           topics: Mapping[str, tuple[TopicId, Sequence[int]]]) -> dict[str, Assignment]:
    """member id -> its subscribed names; topic name -> (id, assignable partitions). Returns targets."""
    targets: dict[str, dict[TopicId, set[int]]] = {member: {} for member in subscriptions}
    for name in sorted({n for names in subscriptions.values() for n in names}):
        if name not in topics:
            continue
        topic_id, assignable = topics[name]
        partitions = sorted(assignable)
        count = len(partitions)
        subscribers = sorted(m for m, names in subscriptions.items() if name in names)
        if count == 0 or not subscribers:
            continue
        if len(subscribers) >= count:
            pairs = [(member, partitions[k % count]) for k, member in enumerate(subscribers)]
        else:
            pairs = [(subscribers[j % len(subscribers)], partitions[j]) for j in range(count)]
        for member, partition in pairs:
            targets[member].setdefault(topic_id, set()).add(partition)
    return {member: {t: frozenset(p) for t, p in assigned.items()} for member, assigned in targets.items()}
