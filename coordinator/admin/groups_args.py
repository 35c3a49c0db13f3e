"""The arguments of `groupcoord groups` (kafka-consumer-groups.sh's), checked before any connection.

The commands themselves, and the subcommand's `run`, are in `coordinator.admin.groups_commands`.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

EXIT_USAGE = 2


def add_arguments(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p = commands.add_parser("groups", help="list, describe, reset and delete consumer groups",
                            description="Consumer-group administration for any Kafka cluster, "
                                        "with kafka-consumer-groups.sh's options.")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    actions = p.add_mutually_exclusive_group(required=True)
    actions.add_argument("--list", action="store_true", help="list groups with their state and type")
    actions.add_argument("--describe", action="store_true", help="offsets and lag per partition (default view)")
    actions.add_argument("--delete", action="store_true", help="delete groups (they must have no members)")
    actions.add_argument("--reset-offsets", action="store_true", help="plan or execute an offset reset")
    actions.add_argument("--delete-offsets", action="store_true", help="delete a group's offsets of topics")
    actions.add_argument("--remove-members", action="store_true", help="remove static members by instance id")
    actions.add_argument("--transactions", action="store_true",
                         help="the transactions the coordinators know, open ones first (--state filters by state)")
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="repeatable")
    p.add_argument("--all-groups", action="store_true", help="every group (describe, delete, reset)")
    p.add_argument("--members", action="store_true", help="with --describe: the members view")
    p.add_argument("--verbose", action="store_true", help="with --describe --members: show assignments")
    p.add_argument("--state", nargs="?", const="", default=None, metavar="STATES",
                   help="with --describe: the state view; with --list: filter by comma-separated states")
    p.add_argument("--type", dest="types", nargs="?", const="", default=None, metavar="TYPES",
                   help="with --list: show the type column; filter by comma-separated group types (classic, "
                        "consumer, share)")
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC[:P,P]",
                   help="with --reset-offsets/--delete-offsets (repeatable)")
    p.add_argument("--all-topics", action="store_true", help="with --reset-offsets: every committed topic")
    strategy = p.add_mutually_exclusive_group()
    strategy.add_argument("--to-earliest", action="store_true")
    strategy.add_argument("--to-latest", action="store_true")
    strategy.add_argument("--to-offset", type=int, metavar="OFFSET")
    strategy.add_argument("--shift-by", type=int, metavar="N")
    strategy.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                          help="ISO 8601; without a zone it is UTC")
    run_mode = p.add_mutually_exclusive_group()
    run_mode.add_argument("--dry-run", action="store_true", help="show the plan only (the default)")
    run_mode.add_argument("--execute", action="store_true", help="commit the planned offsets")
    p.add_argument("--instance-id", action="append", default=[], metavar="ID",
                   help="with --remove-members (repeatable)")
    p.add_argument("--output", choices=["table", "json"], default="table")
    p.add_argument("--timeout", type=int, default=10000, metavar="MS", help="per request (default 10000)")
    return p


def check_usage(args: argparse.Namespace) -> str | None:
    if args.list or args.transactions:
        return None
    if not args.group and not (args.all_groups and (args.describe or args.delete or args.reset_offsets)):
        return "--group is required" + (" (or --all-groups)" if not args.delete_offsets else "")
    if args.reset_offsets:
        if not (args.topic or args.all_topics):
            return "--reset-offsets needs --topic or --all-topics"
        if not (args.to_earliest or args.to_latest or args.to_offset is not None or args.shift_by is not None
                or args.to_datetime):
            return "--reset-offsets needs one of --to-earliest, --to-latest, --to-offset, --shift-by, --to-datetime"
    if args.delete_offsets and not args.topic:
        return "--delete-offsets needs --topic"
    if args.remove_members and not args.instance_id:
        return "--remove-members needs --instance-id"
    if args.to_datetime:
        try:
            parse_datetime_ms(args.to_datetime)
        except ValueError:
            return f"--to-datetime {args.to_datetime!r} is not ISO 8601 (e.g. 2026-11-22T10:00:00.000)"
    return None


def parse_datetime_ms(text: str) -> int:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
