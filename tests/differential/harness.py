"""Differential testing: one scripted raw-protocol conversation, played against Apache Kafka and
against groupcoord, and every response field compared.

A conversation is a function of a ``Side``: it opens named connections, sends requests built with the
project's codec, and builds later requests from earlier answers (member ids, generations), so the
same script drives both servers. Each side keeps a transcript of (request, response) exchanges in
script order; ``compare`` normalises both transcripts and lists every field that differs.

Normalised (never compared as-is): generated ids (member ids keep their shape, e.g.
``client-<uuid>#1``, numbered in order of first appearance on each side), topic ids, producer ids, the run token
that keeps group and topic names unique, cluster ids, node ids, hosts, ports, throttle times and
wall-clock timestamps (compared only as set or not).
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from protocol.apis import API_SPECS
from protocol.messages import DescribeGroupsRequest, ListGroupsResponse, MetadataRequest, Struct
from tests.server.conftest import KafkaWire

UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
KAFKA_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")  # Kafka's Uuid.toString(): url-safe base64, no padding
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
MEMBER_ID_FIELDS = frozenset({"member_id", "leader", "leader_id"})
ID_FIELDS = frozenset({"topic_id"})
# Each server allocates its own producer ids: numbered by first appearance.
PRODUCER_ID_FIELDS = frozenset({"producer_id", "v3_and_below_producer_id"})
TIME_FIELDS = frozenset({"transaction_start_time_ms"})  # wall-clock times: compared as set (> 0) or not
NODE_FIELDS = frozenset({"node_id", "controller_id", "broker_id", "leader_id_node"})
HOST_PORT_FIELDS = frozenset({"host", "port"})
DROPPED_FIELDS = frozenset({"throttle_time_ms", "cluster_id"})


@dataclass
class Exchange:
    """One request and its response (None until received)."""

    step: int
    connection: str
    api_key: int
    version: int
    request: Any
    response: Any = None

    @property
    def api_name(self) -> str:
        return API_SPECS[self.api_key].name


@dataclass
class Pending:
    exchange: Exchange
    correlation_id: int


@dataclass
class Side:
    """One server's half of a conversation."""

    name: str  # "kafka" or "groupcoord"
    host: str
    port: int
    token: str  # makes group and topic names unique to this run
    transcript: list[Exchange] = field(default_factory=list)
    _wires: dict[str, KafkaWire] = field(default_factory=dict)

    def wire(self, connection: str) -> KafkaWire:
        if connection not in self._wires:
            self._wires[connection] = KafkaWire(self.host, self.port, client_id=connection)
        return self._wires[connection]

    def name_of(self, stem: str) -> str:
        """A group or topic name unique to this run (the token is normalised away)."""
        return f"{stem}-{self.token}"

    def send(self, connection: str, api_key: int, version: int, request: Any) -> Pending:
        exchange = Exchange(len(self.transcript), connection, api_key, version, request)
        self.transcript.append(exchange)
        return Pending(exchange, self.wire(connection).send(api_key, version, request))

    def receive(self, pending: Pending, timeout: float = 8.0) -> Any:
        wire = self.wire(pending.exchange.connection)
        wire.sock.settimeout(timeout)
        try:
            correlation_id, response = wire.receive(pending.exchange.api_key, pending.exchange.version)
        finally:
            wire.sock.settimeout(5.0)
        assert correlation_id == pending.correlation_id, f"{self.name}: answers out of order"
        if pending.exchange.api_key == ListGroupsResponse.api_key:
            # Only this run's groups: the oracle is shared by the whole session.
            response.groups = [g for g in response.groups if self.token in g.group_id]
        pending.exchange.response = response
        return response

    def call(self, connection: str, api_key: int, version: int, request: Any) -> Any:
        return self.receive(self.send(connection, api_key, version, request))

    def nothing_yet(self, pending: Pending, wait_s: float = 0.3) -> bool:
        """True when no answer to ``pending`` has arrived within ``wait_s`` (a parked request)."""
        wire = self.wire(pending.exchange.connection)
        wire.sock.settimeout(wait_s)
        try:
            return not wire.sock.recv(1, socket.MSG_PEEK)
        except TimeoutError:
            return True
        finally:
            wire.sock.settimeout(5.0)

    def await_state(self, group: str, state: str, timeout: float = 10.0) -> None:
        """Wait (unrecorded, on a private connection) until DescribeGroups shows ``group`` in ``state``:
        a request sent on one connection must reach the coordinator before the next one on another
        connection, or the conversation would depend on a race between the two sockets."""
        wire = self.wire("_await")
        deadline = time.monotonic() + timeout
        while True:
            (described,) = wire.request(DescribeGroupsRequest.api_key, 5, DescribeGroupsRequest(groups=[group])).groups
            if described.group_state == state:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: {group} still {described.group_state}, not {state}")
            time.sleep(0.02)  # poll interval

    def await_topics(self, names: list[str], partitions: int, timeout: float = 10.0) -> None:
        """Wait (unrecorded) until Metadata shows every topic with its partitions: Kafka's controller
        creates a topic before the broker's metadata image (which the group coordinator reads) has it."""
        wire = self.wire("_await")
        Topic = MetadataRequest.MetadataRequestTopic
        deadline = time.monotonic() + timeout
        while True:
            response = wire.request(MetadataRequest.api_key, 9, MetadataRequest(
                topics=[Topic(name=n) for n in names], allow_auto_topic_creation=False))
            if all(t.error_code == 0 and len(t.partitions) == partitions for t in response.topics):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: topics {names} not in the metadata after {timeout}s")
            time.sleep(0.02)  # poll interval

    def close(self) -> None:
        for wire in self._wires.values():
            wire.close()
        self._wires.clear()


Conversation = Callable[[Side], None]


@dataclass(frozen=True)
class Difference:
    conversation: str
    step: int
    api: str
    version: int
    path: str
    kafka: Any
    groupcoord: Any

    def __str__(self) -> str:
        return (f"{self.conversation} step {self.step} {self.api} v{self.version} {self.path}: "
                f"kafka={self.kafka!r} groupcoord={self.groupcoord!r}")


class Normaliser:
    """Per side: stable placeholders for the ids each server makes up."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.placeholders: dict[str, str] = {}

    def _placeholder(self, value: str, kind: str, keep_shape: bool = True) -> str:
        key = f"{kind}:{value}"
        if key not in self.placeholders:
            shape = UUID_TEXT.sub("<uuid>", value.replace(self.token, "T"))
            shape = "<uuid>" if KAFKA_UUID_TEXT.fullmatch(shape) else shape
            number = sum(1 for p in self.placeholders.values() if p.startswith(kind)) + 1
            self.placeholders[key] = f"{kind}:{shape}#{number}" if keep_shape else f"{kind}#{number}"
        return self.placeholders[key]

    def value(self, name: str, value: Any) -> Any:
        if name in DROPPED_FIELDS:
            return "<dropped>"
        if name in NODE_FIELDS and isinstance(value, int):
            return "<node>" if value >= 0 else value
        if name in TIME_FIELDS and isinstance(value, int) and value > 0:
            return "<time>"
        if name in PRODUCER_ID_FIELDS and isinstance(value, int) and value >= 0:
            # Numbered alone, without the value: Kafka's ids depend on what else the session's oracle
            # allocated (the Java clients' idempotent producers).
            return self._placeholder(str(value), "producer", keep_shape=False)
        if name in HOST_PORT_FIELDS and value not in ("", -1, None):
            return f"<{name}>"
        if isinstance(value, str):
            if name in MEMBER_ID_FIELDS and value:
                return self._placeholder(value, "member")
            if name in ID_FIELDS and value != ZERO_UUID and value:
                return self._placeholder(value, "id")
            return value.replace(self.token, "T")
        if name in ID_FIELDS and value is not None and not isinstance(value, (int, bool)):
            text = str(value)
            return text if set(text) <= {"0", "-", "A"} else self._placeholder(text, "id")
        return value

    def plain(self, message: Any, name: str = "") -> Any:
        if isinstance(message, Struct):
            # An entry answering an error carries producer id 0 for "none" (DescribeTransactions of an
            # unknown id), not an allocated id: left as it is.
            failed = getattr(message, "error_code", 0) not in (0, None)
            return {a: getattr(message, a) if failed and a in PRODUCER_ID_FIELDS
                    else self.plain(getattr(message, a), a) for a in message._attrs}
        if isinstance(message, list):
            return [self.plain(v, name) for v in message]
        if isinstance(message, bytes):
            return message.hex()
        return self.value(name, message)


def flatten(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        yield f"{path}.len", len(value)
        for i, item in enumerate(value):
            yield from flatten(item, f"{path}[{i}]")
    else:
        yield path, value


def canonical(message: Any) -> Any:
    """Lists whose order Kafka leaves unspecified are sorted (ListGroups groups, describe members...)."""
    if isinstance(message, dict):
        return {k: canonical(v) for k, v in message.items()}
    if isinstance(message, list):
        items = [canonical(v) for v in message]
        if items and all(isinstance(v, dict) for v in items):
            return sorted(items, key=repr)
        return items
    return message


def compare(name: str, kafka: Side, groupcoord: Side) -> tuple[list[Difference], list[str]]:
    """Field differences between the two transcripts, and the report lines of every pair."""
    differences: list[Difference] = []
    lines: list[str] = [f"== conversation {name}"]
    kn, gn = Normaliser(kafka.token), Normaliser(groupcoord.token)
    if len(kafka.transcript) != len(groupcoord.transcript):
        differences.append(Difference(name, -1, "-", 0, "transcript.len", len(kafka.transcript),
                                      len(groupcoord.transcript)))
    for k, g in zip(kafka.transcript, groupcoord.transcript, strict=False):  # a length difference is noted above
        k_request, g_request = kn.plain(k.request), gn.plain(g.request)
        k_response, g_response = canonical(kn.plain(k.response)), canonical(gn.plain(g.response))
        lines.append(f"-- step {k.step} [{k.connection}] {k.api_name} v{k.version}")
        lines.append(f"   request    kafka      {k_request}")
        if g_request != k_request:
            lines.append(f"   request    groupcoord {g_request}")
            differences.append(Difference(name, k.step, k.api_name, k.version, "<request>", k_request, g_request))
        lines.append(f"   response   kafka      {k_response}")
        lines.append(f"   response   groupcoord {g_response}")
        k_fields, g_fields = dict(flatten(k_response)), dict(flatten(g_response))
        for path in sorted(k_fields.keys() | g_fields.keys()):
            if k_fields.get(path, "<absent>") != g_fields.get(path, "<absent>"):
                differences.append(Difference(name, k.step, k.api_name, k.version, path,
                                              k_fields.get(path, "<absent>"), g_fields.get(path, "<absent>")))
    return differences, lines
