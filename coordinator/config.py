"""Server configuration in Kafka's own setting names.

Sources, each overriding the one before: built-in defaults < a
`server.properties`-style file < `GROUPCOORD_<NAME>` environment variables <
`--override name=value`. Unknown names and bad values stop start-up with a
message that names the setting and what it allows. A loaded `Config` is
immutable; read it as `config["num.partitions"]`, `config.get(...)` or
`config.num_partitions` (dots as underscores), each already typed.

    python -m coordinator.config --markdown     # the README's configuration table
"""

from __future__ import annotations

import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

ENV_PREFIX = "GROUPCOORD_"

# Kafka names we accept for one of ours: KRaft says node.id, ZooKeeper-era files say broker.id.
ALIASES: dict[str, str] = {"broker.id": "node.id"}


class ConfigError(ValueError):
    """A setting that is unknown or has a value it does not allow."""


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # security protocol / listener name, e.g. PLAINTEXT
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


_LISTENER = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)://(\[[0-9a-fA-F:.]+\]|[^:/\s\[\]]*):(\d{1,5})$")
WILDCARD_HOSTS = ("", "0.0.0.0", "::")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_listeners(text: str) -> tuple[Listener, ...]:
    listeners = []
    for item in (part.strip() for part in text.split(",")):
        match = _LISTENER.match(item)
        if not match or int(match.group(3)) > 65535:
            raise ValueError(f"expected PLAINTEXT://host:port, got {item!r}")
        name, host, port = match.group(1).upper(), match.group(2).strip("[]"), int(match.group(3))
        if name not in SECURITY_PROTOCOLS:
            raise ValueError(f"expected one of {', '.join(SECURITY_PROTOCOLS)} as the listener name in {item!r} "
                             "(each listener is named by its security protocol)")
        listeners.append(Listener(name, host, port))
    return tuple(listeners)


# ---- value parsers: each raises ValueError saying what it expected; its docstring is the
# "Allowed" column of the table.

def _int(low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
        if low is not None and value < low:
            raise ValueError(f"must be at least {low}, got {value}")
        if high is not None and value > high:
            raise ValueError(f"must be at most {high}, got {value}")
        return value
    parse.__doc__ = f"integer{f' >= {low}' if low is not None else ''}{f' <= {high}' if high is not None else ''}"
    return parse


def _bool(text: str) -> bool:
    """true or false"""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(f"expected true or false, got {text!r}")
    return lowered == "true"


def _choice(*allowed: str, case_sensitive: bool = True) -> Callable[[str], str]:
    by_key = {(a if case_sensitive else a.upper()): a for a in allowed}

    def parse(text: str) -> str:
        key = text.strip() if case_sensitive else text.strip().upper()
        if key not in by_key:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {text!r}")
        return by_key[key]
    parse.__doc__ = " | ".join(allowed)
    return parse


def _listeners(text: str) -> tuple[Listener, ...]:
    """comma list of PLAINTEXT://host:port"""
    if not text.strip():
        raise ValueError("at least one listener is required, e.g. PLAINTEXT://127.0.0.1:9092")
    return parse_listeners(text)


def _optional_listeners(text: str) -> tuple[Listener, ...] | None:
    """comma list of PLAINTEXT://host:port (empty: same as listeners)"""
    if not text.strip():
        return None
    listeners = parse_listeners(text)
    for listener in listeners:
        if listener.host in WILDCARD_HOSTS:  # as Kafka: clients cannot connect to "anywhere"
            raise ValueError(f"cannot advertise the wildcard address in {str(listener)!r}; name a reachable host")
    return listeners


def _path(text: str) -> Path:
    """directory path"""
    dirs = [part.strip() for part in text.split(",") if part.strip()]
    if not dirs:
        raise ValueError("must not be empty")
    if len(dirs) > 1:  # Kafka spreads partitions over a list; one node with one log dir here
        raise ValueError(f"only one directory is supported, got {len(dirs)}: {text!r}")
    return Path(dirs[0])


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _optional_address(text: str) -> Address | None:
    """host:port (empty: off)"""
    text = text.strip()
    if not text:
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected host:port, got {text!r}")
    return Address(host.strip("[]"), int(port))


def _text(text: str) -> str:
    """any text"""
    return text.strip()


AUTHORIZER_NAMES = ("acl", "StandardAuthorizer", "AclAuthorizer",
                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                    "kafka.security.authorizer.AclAuthorizer")


def _assignors(text: str) -> tuple[str, ...]:
    """comma list of uniform, range (or Kafka's assignor class names); the first is the default"""
    # Imported here: the assignor table lives in the core, which this module must not pull in at import.
    from coordinator.core.consumer.config import ConsumerGroupConfig, parse_assignors

    names = parse_assignors(text)
    ConsumerGroupConfig(assignors=names)  # raises ValueError naming unknown assignors
    return names


def _authorizer_name(text: str) -> str:
    """empty, acl, or Kafka's StandardAuthorizer / AclAuthorizer class name"""
    name = text.strip()
    if name and name not in AUTHORIZER_NAMES:
        raise ValueError(f"expected empty (no authorization) or one of {', '.join(AUTHORIZER_NAMES)}, got {text!r}")
    return name


# ---- the table

@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: str
    doc: str
    kind: str = "string"  # Kafka's ConfigDef type, for DescribeConfigs: boolean, string, int, long, list, password
    # Kafka's DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS holds it: DescribeConfigs answers read_only=false.
    dynamic: bool = False
    # Kafka defines it without a default (null): unset (empty), DescribeConfigs answers null, not "".
    optional: bool = False

    @property
    def sensitive(self) -> bool:
        """A PASSWORD-typed setting: its value never leaves the process (Kafka's maybeSensitive)."""
        return self.kind == "password"

    @property
    def env_name(self) -> str:
        return env_name(self.name)

    @property
    def allowed(self) -> str:
        return self.parse.__doc__ or ""


def env_name(name: str) -> str:
    return ENV_PREFIX + name.upper().replace(".", "_").replace("-", "_")


_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")

SETTINGS: tuple[Setting, ...] = (
    Setting("listeners", _listeners, "PLAINTEXT://127.0.0.1:9092", "Where the server accepts connections.",
            "list", dynamic=True),
    Setting("advertised.listeners", _optional_listeners, "",
            "Host and port given to clients in Metadata and FindCoordinator.", "list", optional=True),
    Setting("node.id", _int(0, _INT32_MAX), "0", "This broker's id.", "int"),
    Setting("log.dirs", _path, "./data", "Data directory: partition logs, coordinator log, cluster id."),
    Setting("num.partitions", _int(1, 100000), "1", "Partitions of an auto-created topic.", "int"),
    Setting("default.replication.factor", _int(1, 1), "1", "Replication factor (a single node: 1).", "int"),
    Setting("auto.create.topics.enable", _bool, "true", "Create unknown topics named in Metadata requests.",
            "boolean"),
    Setting("socket.request.max.bytes", _int(1, _INT32_MAX), "104857600",
            "Largest request frame accepted; larger ones close the connection.", "int"),
    Setting("max.connections", _int(1, _INT32_MAX), str(_INT32_MAX),
            "Most client connections open at once; more are closed as they arrive.", "int", dynamic=True),
    Setting("max.connections.per.ip", _int(1, _INT32_MAX), str(_INT32_MAX),
            "Most client connections open at once from one IP address.", "int", dynamic=True),
    Setting("ssl.keystore.location", _text, "",
            "PEM file with this server's certificate chain and private key (SSL and SASL_SSL listeners).",
            dynamic=True, optional=True),
    Setting("ssl.key.password", _text, "", "Password of the private key in ssl.keystore.location, if encrypted.",
            "password", dynamic=True, optional=True),
    Setting("ssl.truststore.location", _text, "",
            "PEM file of the CA certificates that client certificates must chain to (ssl.client.auth).",
            dynamic=True, optional=True),
    Setting("ssl.client.auth", _choice("none", "requested", "required"), "none",
            "Whether SSL clients must (required) or may (requested) present a certificate.", dynamic=True),
    Setting("sasl.enabled.mechanisms", _text, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "SASL mechanisms offered on SASL_PLAINTEXT and SASL_SSL listeners.", "list", dynamic=True),
    Setting("sasl.credentials.file", _text, "",
            "Users and their SASL credentials, managed with `groupcoord users` (empty: <log.dirs>/credentials).",
            optional=True),
    Setting("sasl.server.max.receive.size", _int(1, _INT32_MAX), "524288",
            "Largest request accepted before a SASL client has authenticated.", "int"),
    Setting("authorizer.class.name", _authorizer_name, "",
            "Empty: no authorization. Kafka's StandardAuthorizer or AclAuthorizer class name (or 'acl'): "
            "requests are checked against the ACLs managed with `groupcoord acls`."),
    Setting("allow.everyone.if.no.acl.found", _bool, "false",
            "With the authorizer on: whether a resource no ACL matches is open to everyone.", "boolean"),
    Setting("super.users", _text, "", "Principals allowed everything, separated by ';' (e.g. User:admin;User:ops).",
            "list", optional=True),
    Setting("connections.max.idle.ms", _int(1, _INT64_MAX), "600000", "Idle connections are closed after this.",
            "long"),
    Setting("request.read.timeout.ms", _int(1, _INT64_MAX), "30000",
            "Longest a request may take to arrive once its first bytes are in; slower senders are closed.",
            "long"),
    Setting("shutdown.timeout.ms", _int(0, _INT64_MAX), "10000",
            "On SIGTERM/SIGINT, how long in-flight requests may take before the server exits.", "long"),
    Setting("log.segment.bytes", _int(14, _INT32_MAX), "1073741824", "Segment size at which a log rolls.",
            "int", dynamic=True),
    Setting("log.roll.ms", _int(1, _INT64_MAX), "604800000",
            "Age at which a non-empty active segment rolls (topic setting segment.ms).", "long", dynamic=True),
    Setting("log.cleaner.backoff.ms", _int(1, _INT64_MAX), "15000",
            "Pause between rounds of log maintenance: idle segment rolls, retention, compaction.",
            "long", dynamic=True),
    Setting("log.retention.ms", _int(-1, _INT64_MAX), "604800000", "Delete-policy retention by time (-1: none).",
            "long", dynamic=True),
    Setting("log.retention.bytes", _int(-1, _INT64_MAX), "-1", "Delete-policy retention by size (-1: none).",
            "long", dynamic=True),
    Setting("log.cleanup.policy", _choice("delete", "compact"), "delete", "Default cleanup policy of topics.",
            "list", dynamic=True),
    Setting("log.recovery.corruption", _choice("fail", "truncate"), "fail",
            "A corrupt batch with valid data after it, found on start: fail (refuse to start, naming the file "
            "and byte) or truncate (cut the log there). A torn tail after a crash is always cut."),
    Setting("flush.policy", _choice("always", "interval"), "always",
            "always: acknowledge appends only once fsynced (shared fsyncs); interval: fsync every flush.ms."),
    Setting("flush.ms", _int(1, _INT64_MAX), "1000", "fsync period when flush.policy=interval.", "long"),
    # Transactions (coordinator/server/transactions.py), Kafka's names and defaults.
    Setting("transaction.state.log.num.partitions", _int(1, 10000), "50", "Partitions of __transaction_state.",
            "int"),
    Setting("transaction.max.timeout.ms", _int(1, _INT32_MAX), "900000",
            "Largest transaction timeout a producer may ask for.", "int"),
    Setting("transactional.id.expiration.ms", _int(1, _INT32_MAX), "604800000",
            "Idle time after which a finished transactional id is forgotten.", "int"),
    Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int(1, _INT32_MAX), "10000",
            "Period of the scan that aborts timed-out transactions.", "int"),
    Setting("transaction.remove.expired.transaction.cleanup.interval.ms", _int(1, _INT32_MAX), "3600000",
            "Period of the scan that expires idle transactional ids.", "int"),
    Setting("coordinator.store.url", _text, "",
            "Where coordinator records live: empty for the files under log.dirs, or postgresql://... for a "
            "cluster of nodes sharing one PostgreSQL database (each node a distinct node.id). Logged and "
            "described like any setting: give the password in PGPASSWORD or ~/.pgpass, not here.",
            optional=True),
    Setting("cluster.lease.ms", _int(500, 600_000), "3000",
            "Cluster: how long a node's lease on a coordinator shard lasts without renewal (database clock).",
            "int"),
    Setting("cluster.lease.renew.ms", _int(50, 60_000), "500",
            "Cluster: how often a node renews its leases and heartbeat and claims free shards.", "int"),
    Setting("offsets.topic.num.partitions", _int(1, 10000), "50", "Partitions of __consumer_offsets.", "int"),
    Setting("offsets.retention.minutes", _int(1, _INT32_MAX), "10080",
            "How long committed offsets of empty groups live.", "int"),
    Setting("offset.metadata.max.bytes", _int(0, _INT32_MAX), "4096",
            "Largest metadata string of a committed offset.", "int"),
    Setting("group.initial.rebalance.delay.ms", _int(0, _INT32_MAX), "3000",
            "Wait for more members before the first rebalance of an empty group.", "int"),
    Setting("group.min.session.timeout.ms", _int(0, _INT32_MAX), "6000",
            "Smallest session timeout a member may ask for.", "int"),
    Setting("group.max.session.timeout.ms", _int(0, _INT32_MAX), "1800000",
            "Largest session timeout a member may ask for.", "int"),
    Setting("group.max.size", _int(1, _INT32_MAX), str(_INT32_MAX), "Most members a classic group may hold.", "int"),
    Setting("group.consumer.heartbeat.interval.ms", _int(1, _INT32_MAX), "5000",
            "Heartbeat interval of consumer-protocol (KIP-848) members.", "int"),
    Setting("group.consumer.session.timeout.ms", _int(1, _INT32_MAX), "45000",
            "Session timeout of consumer-protocol (KIP-848) members.", "int"),
    Setting("group.consumer.min.session.timeout.ms", _int(1, _INT32_MAX), "45000",
            "Smallest allowed group.consumer.session.timeout.ms.", "int"),
    Setting("group.consumer.max.session.timeout.ms", _int(1, _INT32_MAX), "60000",
            "Largest allowed group.consumer.session.timeout.ms.", "int"),
    Setting("group.consumer.min.heartbeat.interval.ms", _int(1, _INT32_MAX), "5000",
            "Smallest allowed group.consumer.heartbeat.interval.ms.", "int"),
    Setting("group.consumer.max.heartbeat.interval.ms", _int(1, _INT32_MAX), "15000",
            "Largest allowed group.consumer.heartbeat.interval.ms.", "int"),
    Setting("group.consumer.max.size", _int(1, _INT32_MAX), str(_INT32_MAX),
            "Most members a consumer-protocol (KIP-848) group may hold.", "int"),
    Setting("group.share.session.timeout.ms", _int(1, _INT32_MAX), "45000",
            "Session timeout of share group (KIP-932) members.", "int"),
    Setting("group.share.heartbeat.interval.ms", _int(1, _INT32_MAX), "5000",
            "Heartbeat interval of share group (KIP-932) members.", "int"),
    Setting("group.share.max.size", _int(1, 1000), "200", "Most members a share group may hold.", "int"),
    # The bounds of the share.* GROUP configs (Kafka's GroupCoordinatorConfig and ShareGroupConfig).
    Setting("group.share.min.session.timeout.ms", _int(1, _INT32_MAX), "45000",
            "Smallest allowed share.session.timeout.ms of a share group.", "int"),
    Setting("group.share.max.session.timeout.ms", _int(1, _INT32_MAX), "60000",
            "Largest allowed share.session.timeout.ms of a share group.", "int"),
    Setting("group.share.min.heartbeat.interval.ms", _int(1, _INT32_MAX), "5000",
            "Smallest allowed share.heartbeat.interval.ms of a share group.", "int"),
    Setting("group.share.max.heartbeat.interval.ms", _int(1, _INT32_MAX), "15000",
            "Largest allowed share.heartbeat.interval.ms of a share group.", "int"),
    Setting("group.share.min.record.lock.duration.ms", _int(1000, 30_000), "15000",
            "Smallest allowed share.record.lock.duration.ms of a share group.", "int"),
    Setting("group.share.max.record.lock.duration.ms", _int(30_000, 3_600_000), "60000",
            "Largest allowed share.record.lock.duration.ms of a share group.", "int"),
    Setting("group.share.min.delivery.count.limit", _int(2, 5), "2",
            "Smallest allowed share.delivery.count.limit of a share group.", "int"),
    Setting("group.share.max.delivery.count.limit", _int(5, 25), "10",
            "Largest allowed share.delivery.count.limit of a share group.", "int"),
    Setting("group.share.min.partition.max.record.locks", _int(100, 2000), "100",
            "Smallest allowed share.partition.max.record.locks of a share group.", "int"),
    Setting("group.share.max.partition.max.record.locks", _int(2000, 10000), "4000",
            "Largest allowed share.partition.max.record.locks of a share group.", "int"),
    Setting("group.share.record.lock.duration.ms", _int(1000, 3_600_000), "30000",
            "How long a share group member holds the records it acquired before they are released.", "int"),
    Setting("group.share.delivery.count.limit", _int(2, 10), "5",
            "Deliveries of a record to share group members before it is archived.", "int"),
    Setting("group.share.partition.max.record.locks", _int(100, 10000), "2000",
            "Most records in flight (acquired or awaiting delivery) per share-partition.", "int"),
    Setting("group.share.max.share.sessions", _int(1, _INT32_MAX), "2000",
            "Most share sessions (one per share group member fetching) the broker keeps.", "int"),
    Setting("share.coordinator.state.topic.num.partitions", _int(1, 1000), "50",
            "Partitions of __share_group_state, the log of the share-partitions' delivery state.", "int"),
    Setting("group.consumer.assignors", _assignors, "uniform,range",
            "Server-side assignors of consumer-protocol (KIP-848) groups; the first is the default.", "list"),
    Setting("group.consumer.assignment.interval.ms", _int(0, _INT32_MAX), "1000",
            "Least time between two target assignment computations of a consumer-protocol group (KIP-1263); "
            "changes within it are folded into one run (0: every change at once).", "int"),
    Setting("group.consumer.min.assignment.interval.ms", _int(0, _INT32_MAX), "0",
            "Smallest allowed group.consumer.assignment.interval.ms.", "int"),
    Setting("group.consumer.max.assignment.interval.ms", _int(0, _INT32_MAX), "15000",
            "Largest allowed group.consumer.assignment.interval.ms.", "int"),
    Setting("group.consumer.assignor.offload.enable", _bool, "true",
            "Run consumer-protocol assignors in background worker processes, off the request path (KIP-1263).",
            "boolean"),
    Setting("group.coordinator.background.threads", _int(1, 256), "2",
            "Worker processes that run offloaded assignors (Kafka's background threads; processes here, "
            "so that runs do not hold the interpreter lock).", "int"),
    Setting("group.consumer.migration.policy",
            _choice("disabled", "upgrade", "downgrade", "bidirectional", case_sensitive=False), "bidirectional",
            "Online conversion of non-empty groups between the classic and the consumer protocol: upgrade "
            "(classic to consumer), downgrade (consumer to classic), bidirectional (both) or disabled."),
    Setting("event.loop", _choice("auto", "asyncio", "uvloop"), "auto", "auto: uvloop when installed, else asyncio."),
    Setting("log.level", _choice(*_LOG_LEVELS, case_sensitive=False), "INFO", "Server log level."),
    Setting("http.listener", _optional_address, "",
            "Where to serve /metrics (Prometheus), /healthz and /readyz over HTTP (empty: off).", optional=True),
    Setting("metrics.statsd.address", _optional_address, "", "StatsD daemon to push metrics to over UDP (empty: off).",
            optional=True),
    Setting("metrics.statsd.prefix", _text, "groupcoord", "Prefix of every StatsD metric name."),
    Setting("metrics.statsd.interval.ms", _int(10, _INT32_MAX), "10000", "How often metrics are pushed to StatsD.",
            "int"),
)

SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

HIDDEN = "[hidden]"  # what logs and CLI output show for a secret, as Kafka's config dump prints passwords
# Kafka's PASSWORD-typed names, also under a listener prefix (listener.name.sasl_ssl.plain.sasl.jaas.config).
_SECRET_SUFFIXES = ("password", "sasl.jaas.config", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                    "ssl.truststore.certificates")


def is_sensitive(name: str) -> bool:
    """Whether the value of setting `name` must never be shown: a PASSWORD-typed setting of ours, or a
    name Kafka types PASSWORD (we may be handed one by a Kafka properties file's error message)."""
    setting = SETTINGS_BY_NAME.get(ALIASES.get(name, name))
    if setting is not None:
        return setting.sensitive
    return name.lower().endswith(_SECRET_SUFFIXES)
_BY_ENV: dict[str, Setting] = {s.env_name: s for s in SETTINGS} | {
    env_name(alias): SETTINGS_BY_NAME[name] for alias, name in ALIASES.items()}


class Config(Mapping[str, Any]):
    """Parsed, immutable settings: `config["num.partitions"] -> 1`, or `config.num_partitions`."""

    __slots__ = ("_sources", "_values")

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))
        object.__setattr__(self, "_sources", MappingProxyType(dict(sources)))

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, attribute: str) -> Any:
        try:
            return self._values[attribute.replace("_", ".")]
        except KeyError:
            raise AttributeError(f"no setting named {attribute.replace('_', '.')!r}") from None

    def __setattr__(self, attribute: str, value: Any) -> None:
        raise AttributeError("Config is immutable")

    def __repr__(self) -> str:
        return f"Config({self.loggable()!r})"

    def loggable(self) -> dict[str, str]:
        """The settings not at their default, as text, with every secret shown as [hidden]."""
        return {k: HIDDEN if is_sensitive(k) else self.raw(k) for k in self._values if self._sources[k] != "default"}

    def source(self, name: str) -> str:
        """Where the value came from: "default", "file ...", "env ..." or "--override"."""
        return self._sources[name]

    def raw(self, name: str) -> str:
        """The value as text, in the form the setting is written in (for DescribeConfigs)."""
        value = self._values[name]
        if isinstance(value, tuple):
            return ",".join(str(v) for v in value)
        if isinstance(value, bool):
            return str(value).lower()
        return "" if value is None else str(value)

    @property
    def advertised_listener(self) -> Listener:
        """What clients are told to connect to: the first advertised listener, else the first listener
        (a wildcard bind address advertised as 127.0.0.1, the one address sure to reach it)."""
        advertised = self["advertised.listeners"] or self["listeners"]
        first = advertised[0]
        if first.host in WILDCARD_HOSTS:
            return Listener(first.name, "127.0.0.1", first.port)
        return first


# ---- Java .properties

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_KEY_END = re.compile(r"(?<!\\)(?:\\\\)*[=: \t\f]")  # the first separator not escaped by a backslash


def read_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text as `java.util.Properties.load` does.

    `#`/`!` comment lines; the key ends at the first unescaped `=`, `:` or whitespace; a line
    ending in an odd number of backslashes continues on the next one (its leading whitespace
    dropped); `\\t \\n \\r \\f \\uXXXX` escapes, and a backslash before any other character
    stands for that character.
    """
    result: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        line = line.lstrip(" \t\f")
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1] + next(lines, "").lstrip(" \t\f")
        match = _KEY_END.search(line)
        if match is None:
            key, rest = line, ""
        else:
            at = match.end() - 1
            key, separator = line[:at], line[at]
            rest = line[at + 1:].lstrip(" \t\f")
            if separator not in "=:" and rest[:1] in ("=", ":"):  # "key = value": the = after the blanks
                rest = rest[1:].lstrip(" \t\f")
        name = _unescape(key)
        try:
            result[name] = _unescape(rest)
        except ConfigError as exc:  # named by its key: the value may be a secret
            raise ConfigError(f"{name}: {exc}") from None
    return result


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError("malformed \\uXXXX escape (a \\u not followed by four hex digits)")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(following, following))
            i += 2
    return "".join(out)


# ---- loading

def _apply(values: dict[str, Any], sources: dict[str, str], name: str, text: str, origin: str) -> None:
    setting = SETTINGS_BY_NAME.get(ALIASES.get(name, name))
    if setting is None:
        known = ", ".join(sorted(SETTINGS_BY_NAME))
        raise ConfigError(f"unknown setting {name!r} (from {origin}); known settings: {known}")
    try:
        values[setting.name] = setting.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{setting.name}: {exc} (from {origin})") from None
    sources[setting.name] = origin


# GROUPCOORD_* variables that are not settings: read before any config exists.
NOT_SETTINGS_ENV = frozenset({"GROUPCOORD_PURE_PYTHON"})  # protocol/accel.py: no compiled accelerator


def load_config(file: Path | str | None = None, overrides: Iterable[str] = (),
                environ: Mapping[str, str] | None = None) -> Config:
    """Defaults < `file` < `GROUPCOORD_*` variables of `environ` (default: os.environ) < `overrides`."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        _apply(values, sources, setting.name, setting.default, "default")
    if file is not None:
        try:
            text = Path(file).read_text(encoding="latin-1")  # Properties.load's encoding; \u escapes for the rest
        except OSError as exc:
            raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from None
        for name, value in read_properties(text).items():
            _apply(values, sources, name, value, f"file {file}")
    for key in sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in NOT_SETTINGS_ENV):
        env_setting = _BY_ENV.get(key)
        if env_setting is None:
            known = ", ".join(sorted(s.env_name for s in SETTINGS))
            raise ConfigError(f"unknown environment setting {key}; known: {known}")
        _apply(values, sources, env_setting.name, env[key], f"env {key}")
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            # The item is not echoed whole: a mistyped `ssl.key.password:xyz` must not print the password.
            shown = re.split(r"[:\s]", item.strip(), maxsplit=1)[0] or "(empty)"
            raise ConfigError(f"--override expects name=value, got an item without '=' starting {shown!r}")
        _apply(values, sources, name.strip(), value, "--override")
    _check_together(values)
    return Config(values, sources)


def _check_together(values: Mapping[str, Any]) -> None:
    """Rules that involve more than one setting."""
    if values["group.min.session.timeout.ms"] > values["group.max.session.timeout.ms"]:
        raise ConfigError(
            f"group.min.session.timeout.ms ({values['group.min.session.timeout.ms']}) must not exceed "
            f"group.max.session.timeout.ms ({values['group.max.session.timeout.ms']})")
    _check_consumer_group_timeouts(values)
    _check_share_group_settings(values)


_AT_LEAST, _AT_MOST, _BELOW = (operator.ge, "greater than or equal to"), (operator.le, "less than or equal to"), \
    (operator.lt, "less than")


def _check_consumer_group_timeouts(values: Mapping[str, Any]) -> None:
    """KIP-848 session timeout and heartbeat interval, and KIP-1263's assignment interval, within their
    bounds, checked in GroupCoordinatorConfig's order (so the first error is the one Kafka reports)."""
    prefix = "group.consumer."
    hb, session = prefix + "heartbeat.interval.ms", prefix + "session.timeout.ms"
    min_hb, max_hb = prefix + "min.heartbeat.interval.ms", prefix + "max.heartbeat.interval.ms"
    min_session, max_session = prefix + "min.session.timeout.ms", prefix + "max.session.timeout.ms"
    interval = prefix + "assignment.interval.ms"
    min_interval, max_interval = prefix + "min.assignment.interval.ms", prefix + "max.assignment.interval.ms"
    rules = (
        (max_hb, _AT_LEAST, min_hb), (hb, _AT_LEAST, min_hb), (hb, _AT_MOST, max_hb),
        (max_session, _AT_LEAST, min_session), (session, _AT_LEAST, min_session), (session, _AT_MOST, max_session),
        (hb, _BELOW, session),
        (max_interval, _AT_LEAST, min_interval), (interval, _AT_LEAST, min_interval),
        (interval, _AT_MOST, max_interval),
    )
    for left, (holds, words), right in rules:
        if not holds(values[left], values[right]):
            raise ConfigError(f"{left} ({values[left]}) must be {words} {right} ({values[right]})")


def _check_share_group_settings(values: Mapping[str, Any]) -> None:
    """The share group settings within their bounds, in Kafka 4.4's order: GroupCoordinatorConfig's
    heartbeat interval and session timeout, then ShareGroupConfig's delivery count limit, record
    locks per partition, lock duration, and sessions against the group size."""
    p = "group.share."
    rules = (
        (p + "max.heartbeat.interval.ms", _AT_LEAST, p + "min.heartbeat.interval.ms"),
        (p + "heartbeat.interval.ms", _AT_LEAST, p + "min.heartbeat.interval.ms"),
        (p + "heartbeat.interval.ms", _AT_MOST, p + "max.heartbeat.interval.ms"),
        (p + "max.session.timeout.ms", _AT_LEAST, p + "min.session.timeout.ms"),
        (p + "session.timeout.ms", _AT_LEAST, p + "min.session.timeout.ms"),
        (p + "session.timeout.ms", _AT_MOST, p + "max.session.timeout.ms"),
        (p + "heartbeat.interval.ms", _BELOW, p + "session.timeout.ms"),
        (p + "max.delivery.count.limit", _AT_LEAST, p + "delivery.count.limit"),
        (p + "delivery.count.limit", _AT_LEAST, p + "min.delivery.count.limit"),
        (p + "max.partition.max.record.locks", _AT_LEAST, p + "partition.max.record.locks"),
        (p + "partition.max.record.locks", _AT_LEAST, p + "min.partition.max.record.locks"),
        (p + "record.lock.duration.ms", _AT_LEAST, p + "min.record.lock.duration.ms"),
        (p + "max.record.lock.duration.ms", _AT_LEAST, p + "record.lock.duration.ms"),
        (p + "max.share.sessions", _AT_LEAST, p + "max.size"),
    )
    for left, (holds, words), right in rules:
        if not holds(values[left], values[right]):
            raise ConfigError(f"{left} ({values[left]}) must be {words} {right} ({values[right]})")


def markdown_table() -> str:
    lines = ["| Setting | Environment variable | Default | Allowed | Meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default else "(empty)"
        allowed = s.allowed.replace("|", "\\|")  # a bare | would split the cell
        lines.append(f"| `{s.name}` | `{s.env_name}` | {default} | {allowed} | {s.doc} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv == ["--markdown"]:
        sys.stdout.write(markdown_table() + "\n")
        return 0
    sys.stderr.write("usage: python -m coordinator.config --markdown\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
