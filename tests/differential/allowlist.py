"""Every difference from Apache Kafka the differential suite accepts, with the reason for each.

An entry matches a difference by API name (or "*"), a regular expression over the field path
(``groups[0].members[1].member_id``; ``.len`` for a list's length) and, optionally, a conversation
name. Entries whose reason starts with "BUG, to fix:" are groupcoord bugs found by the suite and not
yet fixed (listed so the suite stays green meanwhile); every other entry is a difference kept on
purpose. Anything not matched here fails the suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.differential.harness import Difference


@dataclass(frozen=True)
class Allowed:
    api: str
    path: str  # regular expression, matched in full
    reason: str
    conversation: str = "*"
    kafka_value: object = "*"  # when set, only a difference where Kafka answered this value
    step: int | None = None  # when set, only this step of the conversation

    @property
    def is_bug(self) -> bool:
        return self.reason.startswith("BUG, to fix:")

    def matches(self, difference: Difference) -> bool:
        return ((self.api in ("*", difference.api))
                and (self.conversation in ("*", difference.conversation))
                and (self.kafka_value == "*" or self.kafka_value == difference.kafka)
                and (self.step is None or self.step == difference.step)
                and re.fullmatch(self.path, difference.path) is not None)


UNKNOWN_TOPIC_OR_PARTITION = 3

ALLOWLIST: tuple[Allowed, ...] = (
    Allowed("CreateTopics", r"topics\[\d+\]\.(configs.*|topic_config_error_code)",
            "Setup step only: groupcoord keeps topics as names and partition counts for the group APIs, it "
            "stores no topic logs, so it reports none of the ~37 log configs a broker returns."),
    Allowed("OffsetCommit", r"topics\[\d+\]\.partitions\[\d+\]\.error_code",
            "BUG, to fix: OffsetCommit takes offsets for topics and partitions the metadata does not have; Kafka "
            "answers UNKNOWN_TOPIC_OR_PARTITION for them before the group is consulted "
            "(KafkaApis.handleOffsetCommitRequest checks its metadata cache), so also before FENCED_INSTANCE_ID. "
            "Not fixed here: many tests and tools commit to topics they never created.",
            kafka_value=UNKNOWN_TOPIC_OR_PARTITION),
    # share_group_membership: Kafka 4.4 initializes a share-partition (record 15, the share coordinator's
    # initialize call) before assigning it: the first heartbeat answers epoch 2 and no partitions.
    *(Allowed(api, r".*", conversation="share_group_membership", step=step, reason=(
        "BUG, to fix: share-partition initialization is not modelled (docs/spec/share-groups.md#heartbeat): "
        "groupcoord assigns a subscribed partition at once (epoch 1 with partitions), Kafka 4.4 only after "
        "initializing it one group epoch later; later steps then carry other epochs."))
      for api, step in (("ShareGroupHeartbeat", 9), ("ShareGroupHeartbeat", 10), ("ShareGroupHeartbeat", 11),
                        ("ShareGroupDescribe", 13))),
    # consumer_group_errors: the probes Kafka 4.4 accepts and groupcoord refuses, each in its own group.
    Allowed("ConsumerGroupHeartbeat", r".*", conversation="consumer_group_errors", step=13,
            reason="BUG, to fix: a join with SubscribedTopicNames [] (a member subscribed to nothing) is admitted "
                   "by Kafka 4.4 (epoch 1, empty assignment); groupcoord refuses it INVALID_REQUEST because its "
                   "core would not bump the group epoch for such a member."),
    Allowed("ConsumerGroupHeartbeat", r".*", conversation="consumer_group_errors", step=14,
            reason="BUG, to fix: a join with SubscribedTopicRegex (KIP-848 regex subscriptions, Kafka 4.0+) is "
                   "refused INVALID_REQUEST 'not supported yet' by groupcoord; Kafka 4.4 admits it and assigns "
                   "the matching topics."),
    *(Allowed(api, path, conversation="consumer_group_errors", reason=(
        "BUG, to fix: LeaveGroup (the classic API) naming a consumer-protocol member of a consumer group "
        "removes it in Kafka 4.4 (NONE, the group becomes Empty); groupcoord answers UNKNOWN_MEMBER_ID, "
        "so the DeleteGroups, heartbeat and ListGroups after it differ too."))
      for api, path in (("LeaveGroup", r"members\[0\]\.error_code"), ("DeleteGroups", r"results\[0\]\.error_code"),
                        ("ConsumerGroupHeartbeat", r"error_code|error_message|member_epoch|member_id"),
                        ("ListGroups", r"groups.*"))),
)


def allowed(difference: Difference) -> Allowed | None:
    return next((entry for entry in ALLOWLIST if entry.matches(difference)), None)


#: tests/clients/test_java_tools_oracle.py: Kafka's CLI tools against both servers. ``api`` is the
#: comparison's label, ``path`` a column name (or ``lines``, ``header``, ``rows.len``, ``tables.len``).
CLI_ALLOWLIST: tuple[Allowed, ...] = (
)


def allowed_cli(difference: Difference) -> Allowed | None:
    return next((entry for entry in CLI_ALLOWLIST if entry.matches(difference)), None)
