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

    @property
    def is_bug(self) -> bool:
        return self.reason.startswith("BUG, to fix:")

    def matches(self, difference: Difference) -> bool:
        return ((self.api in ("*", difference.api))
                and (self.conversation in ("*", difference.conversation))
                and re.fullmatch(self.path, difference.path) is not None)


ALLOWLIST: tuple[Allowed, ...] = (
    Allowed("*", r"(.*\.)?error_message",
            "Free text: Kafka's messages quote its own exception texts; only the error code is the contract."),
)


def allowed(difference: Difference) -> Allowed | None:
    return next((entry for entry in ALLOWLIST if entry.matches(difference)), None)
