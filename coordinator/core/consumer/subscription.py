"""docs/spec/consumer-protocol.md#group-epoch-bumps: a group's subscription metadata (its subscription type:
assignors.subscription_type).

Subscription metadata = for every topic some member subscribes to and the cluster has:
(topic id, name, partition count). A change writes a ConsumerGroupPartitionMetadata record and
bumps the group epoch, which is how new partitions and created or deleted topics reach the assignor.
"""

from __future__ import annotations

from collections.abc import Iterable

from coordinator.core.consumer.model import ConsumerMember
from coordinator.core.consumer.topics import TopicInfo, TopicsView


def distinct_subscriptions(members: Iterable[ConsumerMember]) -> list[tuple[str, ...]]:
    """Each subscription tuple once. Replay interns them, so members with the same subscription share
    one tuple and identity is enough: 1,000 members x 1,000 topics then cost 1,000 steps, not 10^6."""
    return list({id(names): names for names in (m.subscribed_topics for m in members)}.values())


def subscribed_topic_names(members: Iterable[ConsumerMember]) -> set[str]:
    return {name for names in distinct_subscriptions(members) for name in names}


def compute_subscription_metadata(members: Iterable[ConsumerMember], topics: TopicsView) -> dict[str, TopicInfo]:
    """Topics that do not exist are left out: they count once they are created."""
    metadata = {}
    for name in sorted(subscribed_topic_names(members)):
        info = topics.by_name(name)
        if info is not None:
            metadata[name] = info
    return metadata


