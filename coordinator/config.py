"""Server configuration in Kafka's own setting names.

Sources, each overriding the one before: built-in defaults < a
`server.properties`-style file < `GROUPCOORD_<NAME>` environment variables <
`--override name=value`. Unknown names and bad values stop start-up with a
message that names the setting and what it allows.

    python -m coordinator.config --markdown     # the README's configuration table
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_PREFIX = "GROUPCOORD_"


class ConfigError(ValueError):
    """A setting that is unknown or has a value it does not allow."""


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # security protocol / listener name, e.g. PLAINTEXT
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


_LISTENER = re.compile(r"^([A-Z_][A-Z0-9_]*)://(\[[0-9a-fA-F:]+\]|[^:/\s]*):(\d{1,5})$")


def parse_listeners(text: str) -> tuple[Listener, ...]:
    listeners = []
    for item in (part.strip() for part in text.split(",")):
        match = _LISTENER.match(item)
        if not match or not 0 <= int(match.group(3)) <= 65535:
            raise ValueError(f"expected NAME://host:port (e.g. PLAINTEXT://127.0.0.1:9092), got {item!r}")
        name, host, port = match.group(1), match.group(2).strip("[]"), int(match.group(3))
        if name != "PLAINTEXT":
            raise ValueError(f"listener {item!r}: only PLAINTEXT is supported so far")
        listeners.append(Listener(name, host, port))
    if not listeners:
        raise ValueError("at least one listener is required")
    return tuple(listeners)


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


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}, got {text!r}")
        return value
    parse.__doc__ = " | ".join(allowed)
    return parse


def _text(text: str) -> str:
    """text"""
    return text.strip()


def _listeners(text: str) -> tuple[Listener, ...]:
    """comma list of PLAINTEXT://host:port"""
    return parse_listeners(text)


def _optional_listeners(text: str) -> tuple[Listener, ...] | None:
    """comma list of PLAINTEXT://host:port (empty: same as listeners)"""
    return parse_listeners(text) if text.strip() else None


def _path(text: str) -> Path:
    """directory path"""
    if not text.strip():
        raise ValueError("must not be empty")
    return Path(text.strip().split(",")[0])  # one data dir for now; Kafka allows a list


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: str
    doc: str

    @property
    def env_name(self) -> str:
        return ENV_PREFIX + self.name.upper().replace(".", "_").replace("-", "_")


_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1

SETTINGS: tuple[Setting, ...] = (
    Setting("listeners", _listeners, "PLAINTEXT://127.0.0.1:9092", "Where the server accepts connections."),
    Setting("advertised.listeners", _optional_listeners, "",
            "Host and port given to clients in Metadata and FindCoordinator."),
    Setting("node.id", _int(0, _INT32_MAX), "0", "This broker's id."),
    Setting("log.dirs", _path, "./data", "Data directory: partition logs, coordinator log, cluster id."),
    Setting("num.partitions", _int(1, 100000), "1", "Partitions of an auto-created topic."),
    Setting("default.replication.factor", _int(1, 1), "1", "Replication factor (a single node: 1)."),
    Setting("auto.create.topics.enable", _bool, "true", "Create unknown topics named in Metadata requests."),
    Setting("socket.request.max.bytes", _int(1, _INT32_MAX), "104857600",
            "Largest request frame accepted; larger ones close the connection."),
    Setting("connections.max.idle.ms", _int(1, _INT64_MAX), "600000", "Idle connections are closed after this."),
    Setting("shutdown.timeout.ms", _int(0, _INT64_MAX), "10000",
            "On SIGTERM/SIGINT, how long in-flight requests may take before the server exits."),
    Setting("log.segment.bytes", _int(14, _INT32_MAX), "1073741824", "Segment size at which a log rolls."),
    Setting("log.retention.ms", _int(-1, _INT64_MAX), "604800000", "Delete-policy retention by time (-1: none)."),
    Setting("log.retention.bytes", _int(-1, _INT64_MAX), "-1", "Delete-policy retention by size (-1: none)."),
    Setting("log.cleanup.policy", _choice("delete", "compact"), "delete", "Default cleanup policy of topics."),
    Setting("flush.policy", _choice("always", "interval"), "always",
            "always: acknowledge appends only once fsynced (shared fsyncs); interval: fsync every flush.ms."),
    Setting("flush.ms", _int(1, _INT64_MAX), "1000", "fsync period when flush.policy=interval."),
    Setting("offsets.topic.num.partitions", _int(1, 10000), "50", "Partitions of __consumer_offsets."),
    Setting("offsets.retention.minutes", _int(1, _INT32_MAX), "10080", "How long committed offsets of empty groups live."),
    Setting("offset.metadata.max.bytes", _int(0, _INT32_MAX), "4096", "Largest metadata string of a committed offset."),
    Setting("group.initial.rebalance.delay.ms", _int(0, _INT32_MAX), "3000",
            "Wait for more members before the first rebalance of an empty group."),
    Setting("group.min.session.timeout.ms", _int(0, _INT32_MAX), "6000", "Smallest session timeout a member may ask for."),
    Setting("group.max.session.timeout.ms", _int(0, _INT32_MAX), "1800000", "Largest session timeout a member may ask for."),
    Setting("group.max.size", _int(1, _INT32_MAX), str(_INT32_MAX), "Most members a classic group may hold."),
    Setting("group.consumer.heartbeat.interval.ms", _int(1, _INT32_MAX), "5000",
            "Heartbeat interval of consumer-protocol (KIP-848) members."),
    Setting("group.consumer.session.timeout.ms", _int(1, _INT32_MAX), "45000",
            "Session timeout of consumer-protocol (KIP-848) members."),
    Setting("event.loop", _choice("auto", "asyncio", "uvloop"), "auto",
            "auto: uvloop when installed, else asyncio."),
    Setting("log.level", _choice("DEBUG", "INFO", "WARNING", "ERROR"), "INFO", "Server log level."),
)

SETTINGS_BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
_BY_ENV: dict[str, Setting] = {s.env_name: s for s in SETTINGS}


class Config(Mapping[str, Any]):
    """Parsed, immutable settings: `config["num.partitions"] -> 1`."""

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        self._values = dict(values)
        self._sources = dict(sources)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def source(self, name: str) -> str:
        """Where the value came from: default, file, env or override."""
        return self._sources[name]

    def raw(self, name: str) -> str:
        value = self._values[name]
        if isinstance(value, tuple):
            return ",".join(str(v) for v in value)
        if isinstance(value, bool):
            return str(value).lower()
        return "" if value is None else str(value)

    @property
    def advertised_listener(self) -> Listener:
        advertised = self["advertised.listeners"] or self["listeners"]
        first = advertised[0]
        if first.host in ("", "0.0.0.0", "::"):
            return Listener(first.name, "127.0.0.1", first.port)
        return first


def read_properties(text: str) -> dict[str, str]:
    """Java `.properties` syntax: `#`/`!` comments, `=` or `:` separators, `\\` continuations."""
    result: dict[str, str] = {}
    logical: list[str] = []
    for raw_line in text.splitlines():
        line = raw_line.strip() if not logical else raw_line.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        match = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", entry)
        if match:
            result[match.group(1)] = match.group(2)
        else:
            result[entry] = ""
    return result


def _apply(values: dict[str, Any], sources: dict[str, str], name: str, text: str, origin: str) -> None:
    setting = SETTINGS_BY_NAME.get(name)
    if setting is None:
        known = ", ".join(sorted(SETTINGS_BY_NAME))
        raise ConfigError(f"unknown setting {name!r} (from {origin}); known settings: {known}")
    try:
        values[name] = setting.parse(text)
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc} (from {origin}; allowed: {setting.parse.__doc__})") from None
    sources[name] = origin


def load_config(file: Path | None = None, overrides: Iterable[str] = (),
                environ: Mapping[str, str] | None = None) -> Config:
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in SETTINGS:
        _apply(values, sources, setting.name, setting.default, "default")
    if file is not None:
        try:
            text = Path(file).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from None
        for name, value in read_properties(text).items():
            _apply(values, sources, name, value, f"file {file}")
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX):
            continue
        setting = _BY_ENV.get(key)
        if setting is None:
            known = ", ".join(sorted(_BY_ENV))
            raise ConfigError(f"unknown environment setting {key}; known: {known}")
        _apply(values, sources, setting.name, value, f"env {key}")
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--override expects name=value, got {item!r}")
        _apply(values, sources, name.strip(), value, "--override")
    if values["group.min.session.timeout.ms"] > values["group.max.session.timeout.ms"]:
        raise ConfigError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
    return Config(values, sources)


def markdown_table() -> str:
    lines = ["| Setting | Environment variable | Default | Allowed | Meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default else "(empty)"
        allowed = (s.parse.__doc__ or "").replace("|", "\\|")  # a bare | would split the cell
        lines.append(f"| `{s.name}` | `{s.env_name}` | {default} | {allowed} | {s.doc} |")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--markdown"]:
        sys.stdout.write(markdown_table() + "\n")
    else:
        sys.stderr.write("usage: python -m coordinator.config --markdown\n")
        sys.exit(2)
