"""Kafka's ACL decision: may this principal, from this host, do this operation on this resource?

The rules are those of Kafka's StandardAuthorizer:
- super users may do anything;
- a matching DENY wins over any ALLOW;
- ALLOW of ``ALL`` allows every operation, and an allowed READ, WRITE, DELETE or ALTER implies
  DESCRIBE (ALTER_CONFIGS implies DESCRIBE_CONFIGS);
- a resource that no ACL matches at all is open only if ``allow.everyone.if.no.acl.found``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

import structlog

from coordinator.security.acls import (
    WILDCARD,
    AclBinding,
    AclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    read_acls,
)

log = structlog.get_logger()

RELOAD_CHECK_S = 1.0  # how often the ACL file's mtime is looked at, at most

_IMPLIES: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


def decide(bindings: Iterable[AclBinding], principal: str, host: str, operation: Operation,
           resource_type: ResourceType, name: str, super_users: frozenset[str],
           allow_if_no_acl: bool) -> bool:
    if principal in super_users:
        return True
    on_resource = [b for b in bindings if b.matches_resource(resource_type, name)]
    if not on_resource:
        return allow_if_no_acl
    mine = [b for b in on_resource
            if b.principal in (principal, "User:" + WILDCARD) and b.host in (host, WILDCARD)]
    if any(b.permission is Permission.DENY and b.operation in (operation, Operation.ALL) for b in mine):
        return False
    granting = {operation, Operation.ALL} | _IMPLIES.get(operation, frozenset())
    return any(b.permission is Permission.ALLOW and b.operation in granting for b in mine)


class Authorizer:
    """The ACLs of ``path`` (re-read when the file changes) and the broker's authorizer settings."""

    def __init__(self, path: Path, super_users: Iterable[str], allow_if_no_acl: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._clock = clock
        self._bindings: list[AclBinding] = []
        self._mtime: tuple[int, int] | None = None
        self._checked_at = float("-inf")
        self._reload()

    @property
    def bindings(self) -> list[AclBinding]:
        now = self._clock()
        if now - self._checked_at >= RELOAD_CHECK_S:
            self._checked_at = now
            self._reload()
        return self._bindings

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
            mtime: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_ino)  # each write is a new file (rename)
        except FileNotFoundError:
            mtime = None
        if mtime == self._mtime:
            return
        try:
            self._bindings = read_acls(self.path)
        except (AclError, OSError) as exc:  # keep what was in force; say why the new file was refused
            log.error("acls_reload_failed", path=str(self.path), error=str(exc))
            return
        self._mtime = mtime
        log.info("acls_loaded", path=str(self.path), bindings=len(self._bindings))

    def reload_now(self) -> None:
        """Take the file as it is now (after the server itself changed it: in force for the next request)."""
        self._checked_at = self._clock()
        self._reload()

    def allows(self, principal: str, host: str, operation: Operation, resource_type: ResourceType,
               name: str) -> bool:
        return decide(self.bindings, principal, host, operation, resource_type, name, self.super_users,
                      self.allow_if_no_acl)

    def allows_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        return decide_any(self.bindings, principal, host, operation, resource_type, self.super_users,
                          self.allow_if_no_acl)


def decide_any(bindings: Iterable[AclBinding], principal: str, host: str, operation: Operation,
               resource_type: ResourceType, super_users: frozenset[str], allow_if_no_acl: bool) -> bool:
    """Whether ``operation`` is allowed on at least one resource of the type (Kafka's
    authorizeByResourceType, used for idempotent producers: WRITE on any topic will do)."""
    if principal in super_users:
        return True
    of_type = [b for b in bindings if b.resource_type is resource_type]
    if not of_type:
        return allow_if_no_acl
    mine = [b for b in of_type if b.principal in (principal, "User:" + WILDCARD) and b.host in (host, WILDCARD)]
    granting = (operation, Operation.ALL)
    if any(b.permission is Permission.DENY and b.operation in granting and b.resource_name == WILDCARD
           and b.pattern_type is PatternType.LITERAL for b in mine):
        return False
    return any(b.permission is Permission.ALLOW and b.operation in granting for b in mine)


def parse_super_users(text: str) -> list[str]:
    """``super.users``: principals separated by ';' (commas too, for forgiveness)."""
    return [p.strip() for p in text.replace(",", ";").split(";") if p.strip()]
