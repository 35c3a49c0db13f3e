"""`groupcoord acls`: add, remove and list ACLs, with kafka-acls.sh's options.

The ACLs live in ``<log.dirs>/acls.json``; a running server picks up a change within a second. The
same file is what the server's CreateAcls/DeleteAcls change (kafka-acls.sh --bootstrap-server, AdminClient).
"""

from __future__ import annotations

import argparse
import sys
from itertools import product
from pathlib import Path

from coordinator.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    acls_path,
    locked,
    read_acls,
    write_acls,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

# kafka-acls.sh's operation names (Read, DescribeConfigs, ...) -> ours
OPERATION_NAMES = {op.value.replace("_", "").lower(): op for op in Operation}


def _operation(text: str) -> Operation:
    try:
        return OPERATION_NAMES[text.replace("_", "").replace("-", "").lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"unknown operation {text!r}; one of "
                                         f"{', '.join(o.value.title().replace('_', '') for o in Operation)}") from None


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser("acls", help="add, remove and list ACLs",
                            description="ACLs for the server's authorizer (authorizer.class.name), with "
                                        "kafka-acls.sh's options. They are kept in <log.dirs>/acls.json; "
                                        "a running server applies a change within a second.")
    p.add_argument("--data-dir", type=Path, default=Path("./data"), metavar="DIR",
                   help="the server's log.dirs (default ./data)")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--add", action="store_true")
    actions.add_argument("--remove", action="store_true")
    actions.add_argument("--list", action="store_true")
    p.add_argument("--allow-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--deny-principal", action="append", default=[], metavar="User:NAME")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default: every host")
    p.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default: every host")
    p.add_argument("--operation", action="append", default=[], type=_operation, metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs, "
                        "IdempotentWrite, ClusterAction or All (repeatable)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC")
    p.add_argument("--group", action="append", default=[], metavar="GROUP")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--transactional-id", action="append", default=[], metavar="ID")
    p.add_argument("--resource-pattern-type", choices=["literal", "prefixed"], default="literal")
    p.add_argument("--consumer", action="store_true",
                   help="with --topic and --group: Read and Describe on the topics, Read on the groups")
    p.add_argument("--producer", action="store_true",
                   help="with --topic: Write, Describe and Create on the topics, IdempotentWrite on the cluster; "
                        "Write and Describe on the --transactional-id")
    p.set_defaults(run=run)


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    return ([(ResourceType.TOPIC, t) for t in args.topic] + [(ResourceType.GROUP, g) for g in args.group]
            + ([(ResourceType.CLUSTER, CLUSTER_NAME)] if args.cluster else [])
            + [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id])


def _wanted_operations(args: argparse.Namespace, resource_type: ResourceType) -> list[Operation]:
    """The operations to grant on one resource type: the explicit ones, or the --consumer/--producer set."""
    ops = list(args.operation)
    if args.consumer:
        ops += {ResourceType.TOPIC: [Operation.READ, Operation.DESCRIBE],
                ResourceType.GROUP: [Operation.READ]}.get(resource_type, [])
    if args.producer:
        ops += {ResourceType.TOPIC: [Operation.WRITE, Operation.DESCRIBE, Operation.CREATE],
                ResourceType.CLUSTER: [Operation.IDEMPOTENT_WRITE],
                ResourceType.TRANSACTIONAL_ID: [Operation.WRITE, Operation.DESCRIBE]}.get(resource_type, [])
    return list(dict.fromkeys(ops))


def bindings_from(args: argparse.Namespace) -> list[AclBinding]:
    """Every binding the options describe (principals x hosts x operations x resources)."""
    pattern = PatternType(args.resource_pattern_type.upper())
    resources = _resources(args)
    if args.producer and args.topic:
        resources.append((ResourceType.CLUSTER, CLUSTER_NAME))
    out: list[AclBinding] = []
    for permission, principals, hosts in ((Permission.ALLOW, args.allow_principal, args.allow_host),
                                          (Permission.DENY, args.deny_principal, args.deny_host)):
        for principal, host, (rtype, name) in product(principals, hosts or [WILDCARD], resources):
            resource_pattern = PatternType.LITERAL if rtype is ResourceType.CLUSTER else pattern
            for op in _wanted_operations(args, rtype):
                out.append(AclBinding(rtype, name, resource_pattern, principal, host, op, permission))
    return list(dict.fromkeys(out))


def run(args: argparse.Namespace) -> int:
    path = acls_path(args.data_dir)
    try:
        current = read_acls(path)
        if args.list:
            resources = set(_resources(args))
            for b in current:
                if not resources or (b.resource_type, b.resource_name) in resources:
                    print(b.describe())
            return EXIT_OK
        if not _resources(args):
            print("groupcoord acls: name a resource: --topic, --group, --cluster or --transactional-id",
                  file=sys.stderr)
            return EXIT_USAGE
        wanted = bindings_from(args)
        if not wanted:
            print("groupcoord acls: nothing to do: give --allow-principal/--deny-principal and --operation "
                  "(or --consumer/--producer)", file=sys.stderr)
            return EXIT_USAGE
        with locked(path):  # the server's CreateAcls/DeleteAcls may be changing the file too
            current = read_acls(path)
            if args.add:
                updated = current + [b for b in wanted if b not in current]
                verb = "Adding"
            else:
                updated = [b for b in current if b not in wanted]
                verb = "Removing"
            write_acls(path, updated)
    except AclError as exc:
        print(f"groupcoord acls: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        print(f"groupcoord acls: {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    for b in wanted:
        print(f"{verb} {b.describe()}")
    return EXIT_OK
