"""A small blocking Kafka client for admin tools, on the project's own codec.

It works against any broker (this server or Apache Kafka): each connection asks
ApiVersions first and every request uses the newest version both sides speak.
Group requests go to the group's coordinator (FindCoordinator), ListOffsets to
each partition's leader (Metadata).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from typing import Any

from protocol.api_keys import ApiKey
from protocol.apis import API_SPECS
from protocol.client import decode_response, encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsRequest, FindCoordinatorRequest, Message, MetadataRequest
from protocol.primitives import ProtocolError

CLIENT_ID = "groupcoord-admin"
GROUP_KEY_TYPE = 0
_SIZE = struct.Struct(">i")


class AdminError(Exception):
    """A failure the user should read: what was asked, and Kafka's error name when there is one."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int


class BrokerConnection:
    """One TCP connection; requests are sent one at a time and answered in order."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise AdminError(f"cannot connect to {self.address}: {exc.strerror or exc}") from exc
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        self._negotiate()

    def _negotiate(self) -> None:
        # v3 first; a broker that does not know it answers in v0 with its list (KIP-511).
        response = self._exchange(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
            client_software_name="groupcoord-admin", client_software_version="1"))
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            response = self._exchange(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())
        if response.error_code != ErrorCode.NONE:
            raise AdminError(f"{self.address}: ApiVersions failed: {error_name(response.error_code)}",
                             response.error_code)
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def version_for(self, api_key: int, lowest: int = 0) -> int:
        """The newest version of `api_key` that both sides speak, at least `lowest`."""
        ours = API_SPECS[api_key].valid_versions
        theirs = self.versions.get(api_key)
        name = API_SPECS[api_key].name
        if theirs is None:
            raise AdminError(f"{self.address} does not serve {name}")
        assert ours.high is not None  # request schemas have closed version ranges
        version = min(ours.high, theirs[1])
        if version < max(theirs[0], ours.low, lowest):
            raise AdminError(f"no version of {name} that both {self.address} (v{theirs[0]}-{theirs[1]}) "
                             f"and this tool (v{max(ours.low, lowest)}-{ours.high}) speak")
        return version

    def request(self, api_key: int, message: Message, version: int | None = None) -> Any:
        return self._exchange(api_key, self.version_for(api_key) if version is None else version, message)

    def _exchange(self, api_key: int, version: int, message: Message) -> Any:
        self._correlation_id += 1
        name = API_SPECS[api_key].name
        try:
            self.sock.sendall(encode_request(api_key, version, self._correlation_id, CLIENT_ID, message))
            (size,) = _SIZE.unpack(self._read_exactly(4))
            correlation_id, response = decode_response(api_key, version, self._read_exactly(size))
        except (OSError, ConnectionError) as exc:
            raise AdminError(f"{name} to {self.address} failed: {exc}") from exc
        except ProtocolError as exc:
            raise AdminError(f"{name} v{version} response from {self.address} is malformed: {exc}") from exc
        if correlation_id != self._correlation_id:
            raise AdminError(f"{self.address} answered correlation id {correlation_id}, "
                             f"expected {self._correlation_id}")
        return response

    def _read_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


@dataclass
class TopicInfo:
    name: str
    partitions: dict[int, int]  # partition -> leader node id


@dataclass
class AdminClient:
    """Connections to a cluster, opened on demand from one bootstrap address."""

    bootstrap: str
    timeout_s: float = 10.0
    _connections: dict[tuple[str, int], BrokerConnection] = field(default_factory=dict)
    _nodes: dict[int, Node] = field(default_factory=dict)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def connection(self, host: str, port: int) -> BrokerConnection:
        conn = self._connections.get((host, port))
        if conn is None:
            conn = self._connections[(host, port)] = BrokerConnection(host, port, self.timeout_s)
        return conn

    def any_broker(self) -> BrokerConnection:
        host, _, port = self.bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise AdminError(f"--bootstrap-server must be HOST:PORT, got {self.bootstrap!r}")
        return self.connection(host.strip("[]"), int(port))

    def node_connection(self, node_id: int) -> BrokerConnection:
        if node_id not in self._nodes:
            self.metadata([])
        node = self._nodes.get(node_id)
        if node is None:
            raise AdminError(f"broker {node_id} is not in the cluster's metadata")
        return self.connection(node.host, node.port)

    def brokers(self) -> list[Node]:
        self.metadata([])
        return sorted(self._nodes.values(), key=lambda n: n.node_id)

    def metadata(self, topics: list[str] | None) -> dict[str, TopicInfo]:
        """Topic -> partitions and leaders; `topics=None` asks for every topic, `[]` for none."""
        conn = self.any_broker()
        version = conn.version_for(ApiKey.METADATA, lowest=1)  # v0 cannot say "no topics"
        wanted = None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        response = conn.request(ApiKey.METADATA, MetadataRequest(topics=wanted, allow_auto_topic_creation=False),
                                version)
        self._nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in response.brokers}
        result: dict[str, TopicInfo] = {}
        for topic in response.topics:
            if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue
            if topic.error_code != ErrorCode.NONE:
                raise AdminError(f"metadata for topic {topic.name!r}: {error_name(topic.error_code)}", topic.error_code)
            result[topic.name] = TopicInfo(topic.name, {p.partition_index: p.leader_id for p in topic.partitions})
        return result

    def coordinator(self, group: str) -> BrokerConnection:
        """The connection to `group`'s coordinator."""
        conn = self.any_broker()
        version = conn.version_for(ApiKey.FIND_COORDINATOR)
        request = FindCoordinatorRequest(key=group, key_type=GROUP_KEY_TYPE, coordinator_keys=[group])
        response = conn.request(ApiKey.FIND_COORDINATOR, request, version)
        if version >= 4:
            found = response.coordinators[0]
            code, host, port = found.error_code, found.host, found.port
        else:
            code, host, port = response.error_code, response.host, response.port
        if code != ErrorCode.NONE:
            raise AdminError(f"group {group!r}: cannot find its coordinator: {error_name(code)}", code)
        return self.connection(host, port)
