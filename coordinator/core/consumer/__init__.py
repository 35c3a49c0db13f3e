"""Consumer groups (KIP-848): the consumer group protocol core, pure, deterministic, record-driven.

Classic-protocol members inside consumer groups, upgrade and downgrade live in core/migration/;
the consumer group records' factories in coordinator/records/consumer.py, their replay in replay.py.

Modules, one job each:
    config          ConsumerGroupConfig (group.consumer.* settings)
    group_configs   per-group overrides (Kafka's GROUP config resource), a view the shell hands in
    topics          TopicsView: the topic metadata the caller hands in
    member_ids      Kafka-style random member ids from an injected random source
    model           ConsumerGroup, ConsumerMember, MemberState, ConsumerGroupState
    state           AssignmentRun, Waiter: the soft state of assignor runs (held in the shard's ShardState)
    replay          applying the consumer group records (types 3-8) decoded by coordinator.records
    validation      docs/spec/consumer-protocol.md#heartbeat-request: request checks before the group is touched
    membership      docs/spec/consumer-protocol.md#joining and docs/spec/consumer-protocol.md#epoch-validation: group
                    and member lookup, static replacement, epoch checks
    heartbeat       docs/spec/consumer-protocol.md#lifecycle: join/heartbeat processing and the response rules of
                    docs/spec/consumer-protocol.md#heartbeat-response
    subscription    docs/spec/consumer-protocol.md#group-epoch-bumps: subscription metadata and type
    target          docs/spec/consumer-protocol.md#running-the-assignor: running the assignor, changed targets
    jobs            KIP-1263: an assignor run as a compact, picklable job (and its result)
    batching        KIP-1263: deferring runs by the assignment interval, offloading them, applying results
    member_step     reconciling one member, with its record and rebalance timer
    reconciliation  docs/spec/consumer-protocol.md#reconciliation: the next current assignment of a member
    leave           docs/spec/consumer-protocol.md#leaving-fencing-timeouts: leaving, fencing, session and rebalance
                    timeouts
    timers          timer keys and the timers restarted after loading
    offsets         docs/spec/offsets.md#consumer-groups: OffsetCommit v9 / OffsetFetch v9 member checks
    describe        docs/spec/consumer-protocol.md#describe: ConsumerGroupDescribe, ListGroups entries
    deletion        DeleteGroups of an empty consumer group
    expiry          docs/spec/offsets.md#consumer-groups: offset retention, and deletion of empty groups left without
                    offsets
    coordinator     ConsumerGroupCoordinator: these handlers over the shard's one state, called by GroupShard
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
from coordinator.core.consumer.topics import TopicInfo, TopicsChanged, TopicsSnapshot, TopicsView

__all__ = [
    "ConsumerGroup", "ConsumerGroupConfig", "ConsumerGroupCoordinator", "ConsumerGroupState", "ConsumerMember",
    "GroupConfigOverrides", "MemberState", "TopicInfo", "TopicsChanged", "TopicsSnapshot", "TopicsView",
    "parse_assignors",
]
