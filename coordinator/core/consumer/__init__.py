"""Consumer groups (KIP-848): the consumer group protocol core, pure, deterministic, record-driven.

Classic-protocol members inside consumer groups, upgrade and downgrade live in core/migration/;
the consumer group records in core/consumer_group/records.py.

Modules, one job each:
    config          ConsumerGroupConfig (group.consumer.* settings)
    group_configs   per-group overrides (Kafka's GROUP config resource), a view the shell hands in
    topics          TopicsView: the topic metadata the caller hands in
    member_ids      Kafka-style random member ids from an injected random source
    model           ConsumerGroup, ConsumerMember, MemberState, ConsumerGroupState
    state           ConsumerGroupsState: the groups of one shard
    validation      spec 2: request checks before the group is touched
    membership      spec 4.1/4.3: group and member lookup, static replacement, epoch checks
    heartbeat       spec 4: join/heartbeat processing and the response rules of spec 3
    subscription    spec 4.2: subscription metadata and type
    target          spec 7.1: running the assignor, changed targets
    jobs            KIP-1263: an assignor run as a compact, picklable job (and its result)
    batching        KIP-1263: deferring runs by the assignment interval, offloading them, applying results
    member_step     reconciling one member, with its record and rebalance timer
    reconciliation  spec 5: the next current assignment of a member
    leave           spec 6: leaving, fencing, session and rebalance timeouts
    timers          timer keys and the timers restarted after loading
    offsets         spec 8: OffsetCommit v9 / OffsetFetch v9 member checks
    describe        spec 9: ConsumerGroupDescribe, ListGroups entries
    deletion        DeleteGroups of an empty consumer group
    expiry          spec 8: offset retention, and deletion of empty groups left without offsets
    coordinator     ConsumerGroupCoordinator: the facade the server calls
"""

from coordinator.core.consumer.config import ConsumerGroupConfig, parse_assignors
from coordinator.core.consumer.coordinator import ConsumerGroupCoordinator
from coordinator.core.consumer.group_configs import GroupConfigOverrides
from coordinator.core.consumer.model import (
    ConsumerGroup,
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
)
from coordinator.core.consumer.topics import TopicInfo, TopicsSnapshot, TopicsView

__all__ = [
    "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupState", "ConsumerMember",
    "GroupConfigOverrides", "MemberState", "TopicInfo", "TopicsSnapshot", "TopicsView", "parse_assignors",
]
