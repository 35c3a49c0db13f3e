"""The request as the core sees it: one RequestContext from the shell's dispatch to the handlers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Built for every request, so not frozen: a frozen dataclass sets
# each field through object.__setattr__, which cost ~10k of a heartbeat's ~93k instructions.
# Hashable by value as before (unsafe_hash); nothing changes them once built.


@dataclass(slots=True, unsafe_hash=True)
class RequestRef:
    """Opaque handle the shell uses to find a waiting connection again."""

    id: Any


@dataclass(slots=True, unsafe_hash=True)
class RequestContext:
    """One request as every layer sees it (Kafka's RequestContext): built once by the shell's dispatch
    from the request header and the connection, read by the API handlers and the core alike."""

    api_version: int
    now_ms: int  # the wall clock when the request was read: the core's only notion of time
    ref: RequestRef  # names the request if the core parks it
    client_id: str = ""
    client_host: str = ""  # the client's address, bare: "10.0.0.5"
    api_key: int = -1
    correlation_id: int = -1
    peer: str = ""  # "host:port" of the client
    principal: str = "User:ANONYMOUS"  # who the connection authenticated as (SASL), as Kafka names it
    listener: str = "PLAINTEXT"  # the listener the request came in on
    # With an authorizer: may this request's principal DESCRIBE the topic? (KIP-848 regex subscriptions keep
    # only such topics, as Kafka's filterTopicDescribeAuthorizedTopics.) None: no authorizer, every topic.
    may_describe_topic: Callable[[str], bool] | None = field(default=None, compare=False, hash=False)

    @property
    def client_address(self) -> str:
        """The client's address as group members record it, like Java's InetAddress.toString(): "/10.0.0.5"."""
        return "/" + self.client_host
