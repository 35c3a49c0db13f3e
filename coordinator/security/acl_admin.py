"""What CreateAcls, DescribeAcls and DeleteAcls do to a list of ACL bindings: pure functions, no I/O.

The wire carries Kafka's byte codes (ResourceType, PatternType, AclOperation, AclPermissionType);
this module turns them into the store's bindings and filters, and applies Kafka's rules:

- a creation is checked on its own (AclApis.handleCreateAcls, then AclControlManager.validateNewAcl):
  the valid ones are added, each bad one answers INVALID_REQUEST with Kafka's message; adding a
  binding that exists already succeeds without a second copy;
- a filter matches as Kafka's AclBindingFilter does (ANY and null match everything, MATCH finds
  the literal, wildcard and prefixed bindings that apply to a name); every filter of a DeleteAcls
  is matched against the bindings as they were before the request, and all its deletions are
  written at once (AclControlManager.deleteAcls is atomic);
- codes Kafka does not know (UNKNOWN, or out of range) make the whole request invalid, as Kafka's
  request parsing refuses them, and version 0 knows only literal patterns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from coordinator.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourceType,
)

ANY = 1  # the ANY code of every one of Kafka's four ACL enums
MATCH = 2  # PatternType.MATCH

RESOURCE_TYPE_CODES: dict[ResourceType, int] = {
    ResourceType.TOPIC: 2, ResourceType.GROUP: 3, ResourceType.CLUSTER: 4, ResourceType.TRANSACTIONAL_ID: 5,
    ResourceType.DELEGATION_TOKEN: 6, ResourceType.USER: 7}
PATTERN_CODES: dict[PatternType, int] = {PatternType.LITERAL: 3, PatternType.PREFIXED: 4}
OPERATION_CODES: dict[Operation, int] = {
    Operation.ALL: 2, Operation.READ: 3, Operation.WRITE: 4, Operation.CREATE: 5, Operation.DELETE: 6,
    Operation.ALTER: 7, Operation.DESCRIBE: 8, Operation.CLUSTER_ACTION: 9, Operation.DESCRIBE_CONFIGS: 10,
    Operation.ALTER_CONFIGS: 11, Operation.IDEMPOTENT_WRITE: 12, Operation.CREATE_TOKENS: 13,
    Operation.DESCRIBE_TOKENS: 14, Operation.TWO_PHASE_COMMIT: 15}
PERMISSION_CODES: dict[Permission, int] = {Permission.DENY: 2, Permission.ALLOW: 3}

_RESOURCE_TYPES = {code: t for t, code in RESOURCE_TYPE_CODES.items()}
_PATTERNS = {code: p for p, code in PATTERN_CODES.items()}
_OPERATIONS = {code: o for o, code in OPERATION_CODES.items()}
_PERMISSIONS = {code: p for p, code in PERMISSION_CODES.items()}
# Every code Kafka's enums know (a filter may also hold ANY, and MATCH for patterns); others read as UNKNOWN.
_KNOWN = (set(_RESOURCE_TYPES) | {ANY}, set(_PATTERNS) | {ANY, MATCH}, set(_OPERATIONS) | {ANY},
          set(_PERMISSIONS) | {ANY})


def _all_known(resource_type: int, pattern_type: int, operation: int, permission: int) -> bool:
    codes = (resource_type, pattern_type, operation, permission)
    return all(code in known for code, known in zip(codes, _KNOWN, strict=True))


class RequestInvalid(ValueError):
    """The request as a whole cannot be taken (Kafka refuses it while parsing); `unsupported_version`
    when it asks version 0 for more than literal patterns."""

    def __init__(self, message: str, unsupported_version: bool = False) -> None:
        super().__init__(message)
        self.unsupported_version = unsupported_version


@dataclass(frozen=True, slots=True)
class Creation:
    """One CreateAcls entry, in wire codes."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter, in wire codes; None for a name, principal or host matches any."""

    resource_type: int
    resource_name: str | None
    pattern_type: int
    principal: str | None
    host: str | None
    operation: int
    permission: int

    def matches(self, b: AclBinding) -> bool:
        return self._matches_pattern(b) and self._matches_entry(b)

    def _matches_pattern(self, b: AclBinding) -> bool:
        # ResourcePatternFilter.matches
        if self.resource_type != ANY and self.resource_type != RESOURCE_TYPE_CODES[b.resource_type]:
            return False
        pattern = PATTERN_CODES[b.pattern_type]
        if self.pattern_type not in (ANY, MATCH) and self.pattern_type != pattern:
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (ANY, pattern):
            return self.resource_name == b.resource_name
        if b.pattern_type is PatternType.LITERAL:  # MATCH: the bindings that apply to this name
            return self.resource_name == b.resource_name or b.resource_name == WILDCARD
        return self.resource_name.startswith(b.resource_name)

    def _matches_entry(self, b: AclBinding) -> bool:
        # AccessControlEntryFilter.matches
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != ANY and self.operation != OPERATION_CODES[b.operation]:
            return False
        return self.permission == ANY or self.permission == PERMISSION_CODES[b.permission]


def check_creations(creations: Iterable[Creation], version: int) -> None:
    """CreateAclsRequest.validate: raises RequestInvalid for what Kafka refuses while parsing."""
    creations = list(creations)
    if version == 0 and any(c.pattern_type != PATTERN_CODES[PatternType.LITERAL] for c in creations):
        raise RequestInvalid("Version 0 only supports literal resource pattern types", unsupported_version=True)
    for c in creations:
        # Codes that are none of Kafka's values (it reads them as UNKNOWN); ANY and MATCH are values,
        # refused one creation at a time (binding_of).
        if not _all_known(c.resource_type, c.pattern_type, c.operation, c.permission):
            raise RequestInvalid(f"CreatableAcls contain unknown elements: {c}")


def check_filter(f: AclFilter, version: int) -> AclFilter:
    """DescribeAclsRequest/DeleteAclsRequest.normalizeAndValidate: version 0 reads ANY as LITERAL
    (the only pattern type it knew); raises RequestInvalid for what Kafka refuses while parsing."""
    literal = PATTERN_CODES[PatternType.LITERAL]
    if version == 0:
        if f.pattern_type == ANY:
            f = AclFilter(f.resource_type, f.resource_name, literal, f.principal, f.host, f.operation, f.permission)
        elif f.pattern_type != literal:
            raise RequestInvalid("Version 0 only supports literal resource pattern types", unsupported_version=True)
    if not _all_known(f.resource_type, f.pattern_type, f.operation, f.permission):
        raise RequestInvalid(f"Filter contains UNKNOWN elements: {f}")
    return f


def _name(code: int, table: dict[int, ResourceType] | dict[int, PatternType] | dict[int, Operation]
          | dict[int, Permission]) -> str:
    value = table.get(code)
    return value.value if value is not None else {ANY: "ANY", MATCH: "MATCH"}.get(code, "UNKNOWN")


def binding_of(c: Creation) -> AclBinding | str:
    """The binding a creation asks for, or Kafka's reason to refuse it (checked in Kafka's order)."""
    if c.resource_type == RESOURCE_TYPE_CODES[ResourceType.CLUSTER] and c.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not c.resource_name:
        return "Invalid empty resource name"
    if c.resource_type not in _RESOURCE_TYPES:
        return f"Invalid resourceType {_name(c.resource_type, _RESOURCE_TYPES)}"
    if c.pattern_type not in _PATTERNS:
        return f"Invalid patternType {_name(c.pattern_type, _PATTERNS)}"
    if c.operation not in _OPERATIONS:
        return f"Invalid operation {_name(c.operation, _OPERATIONS)}"
    if c.permission not in _PERMISSIONS:
        return f"Invalid permissionType {_name(c.permission, _PERMISSIONS)}"
    kind, colon, name = c.principal.partition(":")
    if not (kind and colon and name):
        # Kafka stores such a principal (it could never match a client); the store here refuses it, with
        # the words of Kafka's SecurityUtils.parseKafkaPrincipal.
        return f"expected a string in format principalType:principalName but got {c.principal}"
    return AclBinding(_RESOURCE_TYPES[c.resource_type], c.resource_name, _PATTERNS[c.pattern_type], c.principal,
                      c.host, _OPERATIONS[c.operation], _PERMISSIONS[c.permission])


def create(current: list[AclBinding], creations: list[Creation]) -> tuple[list[AclBinding], list[str | None]]:
    """The bindings after the creations, and per creation None (done) or the reason it was refused."""
    updated = list(current)
    present = set(current)
    results: list[str | None] = []
    for c in creations:
        binding = binding_of(c)
        if isinstance(binding, str):
            results.append(binding)
            continue
        if binding not in present:
            present.add(binding)
            updated.append(binding)
        results.append(None)
    return updated, results


def delete(current: list[AclBinding], filters: list[AclFilter]) -> tuple[list[AclBinding], list[list[AclBinding]]]:
    """The bindings left, and per filter the bindings it matched (against the bindings before the request)."""
    matched = [[b for b in current if f.matches(b)] for f in filters]
    gone = {b for found in matched for b in found}
    return [b for b in current if b not in gone], matched


def describe(current: list[AclBinding], f: AclFilter) -> dict[tuple[ResourceType, str, PatternType], list[AclBinding]]:
    """The matching bindings grouped by resource pattern, as DescribeAclsResponse.aclsResources does."""
    grouped: dict[tuple[ResourceType, str, PatternType], list[AclBinding]] = {}
    for b in current:
        if f.matches(b):
            grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    return grouped
