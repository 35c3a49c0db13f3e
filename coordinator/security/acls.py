"""ACL bindings as Kafka defines them, and the file that keeps them.

A binding allows or denies one principal (``User:alice``, or ``User:*`` for everyone) one
operation on resources named literally (``orders``, or ``*`` for all of that type) or by prefix,
from one host (or ``*``). The file is JSON, one object per binding, written atomically by
``groupcoord acls``; the server re-reads it when it changes.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path

ACLS_FILE_NAME = "acls.json"
WILDCARD = "*"


class ResourceType(str, Enum):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"
    DELEGATION_TOKEN = "DELEGATION_TOKEN"
    USER = "USER"


class PatternType(str, Enum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Operation(str, Enum):
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    CLUSTER_ACTION = "CLUSTER_ACTION"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"
    CREATE_TOKENS = "CREATE_TOKENS"
    DESCRIBE_TOKENS = "DESCRIBE_TOKENS"
    TWO_PHASE_COMMIT = "TWO_PHASE_COMMIT"


class Permission(str, Enum):
    ALLOW = "ALLOW"
    DENY = "DENY"


CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource, as Kafka names it


class AclError(ValueError):
    """A binding or an ACL file that does not make sense; the message says what and where."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def __post_init__(self) -> None:
        kind, colon, name = self.principal.partition(":")
        if not (kind and colon and name):  # Kafka's KafkaPrincipal form, as SecurityUtils.parseKafkaPrincipal
            raise AclError(f"principal must be <type>:<name>, such as User:<name> or User:*, got {self.principal!r}")
        if not self.resource_name:
            raise AclError("a resource name is required")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise AclError(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}")

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def describe(self) -> str:
        return (f"{self.permission.value} {self.principal} {self.operation.value} from {self.host} on "
                f"{self.resource_type.value} {self.pattern_type.value.lower()} {self.resource_name!r}")

    def to_json(self) -> dict[str, str]:
        return {k: (v.value if isinstance(v, Enum) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, item: dict[str, str]) -> AclBinding:
        try:
            return cls(ResourceType(item["resource_type"]), item["resource_name"], PatternType(item["pattern_type"]),
                       item["principal"], item.get("host", WILDCARD), Operation(item["operation"]),
                       Permission(item["permission"]))
        except (KeyError, ValueError, TypeError) as exc:
            raise AclError(f"bad ACL entry {item!r}: {exc}") from None


def acls_path(data_dir: Path) -> Path:
    return Path(data_dir) / ACLS_FILE_NAME


def read_acls(path: Path) -> list[AclBinding]:
    """The bindings in ``path``; none when the file does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    try:
        items = json.loads(text)
    except ValueError as exc:
        raise AclError(f"{path}: not JSON: {exc}") from None
    if not isinstance(items, list):
        raise AclError(f"{path}: expected a JSON list of ACL entries")
    return [AclBinding.from_json(item) for item in items]


def write_acls(path: Path, bindings: list[AclBinding]) -> None:
    """Replace the file's content at once (a reader sees the old list or the new one, never half), durably:
    the file and the rename are fsynced before this returns, so an acknowledged change survives a crash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        json.dump([b.to_json() for b in bindings], out, indent=1)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the ACL file's lock: one read-modify-write at a time, between `groupcoord acls` and the
    server's CreateAcls/DeleteAcls (an advisory lock on a file beside it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
