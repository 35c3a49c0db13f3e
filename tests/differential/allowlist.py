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


ALLOWLIST: tuple[Allowed, ...] = (
    Allowed("CreateTopics", r"topics\[\d+\]\.(configs.*|topic_config_error_code)",
            "Setup step only: groupcoord keeps topics as names and partition counts for the group APIs, it "
            "stores no topic logs, so it reports none of the ~37 log configs a broker returns."),
    Allowed("CreatePartitions", r"<request>", conversation="create_partitions",
            reason="Manual assignments name the node itself, whose id differs: the oracle is node 1, groupcoord "
                   "node 0 (the conversation reads it from Metadata)."),
    *(Allowed("CreatePartitions", r"results\[0\]\.error_message", conversation="create_partitions", step=step,
              reason="The message names the node itself (node 1 in the oracle, node 0 in groupcoord).")
      for step in (11, 13)),
    Allowed("ListGroups", r"groups\[\d+\]\.group_state", conversation="consumer_group_errors", step=33,
            kafka_value="Assigning",
            reason="The regex group of step 14: Kafka 4.4 resolves a new regular expression on a background "
                   "executor and computes the target at a later heartbeat, so its group waits in Assigning; "
                   "groupcoord resolves it in the joining heartbeat and computes the target with it "
                   "(docs/spec/consumer-protocol.md#regular-expressions), so its group is already Stable."),
)


def allowed(difference: Difference) -> Allowed | None:
    return next((entry for entry in ALLOWLIST if entry.matches(difference)), None)


#: tests/clients/test_java_tools_oracle.py: Kafka's CLI tools against both servers. ``api`` is the
#: comparison's label, ``path`` a column name (or ``lines``, ``header``, ``rows.len``, ``tables.len``).
CLI_ALLOWLIST: tuple[Allowed, ...] = (
)


def allowed_cli(difference: Difference) -> Allowed | None:
    return next((entry for entry in CLI_ALLOWLIST if entry.matches(difference)), None)
