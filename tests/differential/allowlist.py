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
    Allowed("CreatePartitions", r"<request>", conversation="create_partitions",
            reason="Manual assignments name the node itself, whose id differs: the oracle is node 1, groupcoord "
                   "node 0 (the conversation reads it from Metadata)."),
    *(Allowed("CreatePartitions", r"results\[0\]\.error_message", conversation="create_partitions", step=step,
              reason="The message names the node itself (node 1 in the oracle, node 0 in groupcoord).")
      for step in (11, 13)),
    # consumer_group_errors: the classic LeaveGroup naming a consumer-protocol member.
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
