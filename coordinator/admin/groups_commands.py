"""`groupcoord groups`: run the chosen action and print its answer.

Tables are aligned like kafka-consumer-groups.sh's; `--output json` prints the same rows as JSON.
Exit codes: 0 done, 1 a Kafka or connection error (printed with the group and Kafka's error
name), 2 bad usage. Notes for people (dry run, empty group) go to stderr so stdout stays data.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from coordinator.admin import groups as ops
from coordinator.admin.client import AdminClient, AdminError, error_name
from coordinator.admin.groups_args import EXIT_USAGE, add_arguments, check_usage, parse_datetime_ms
from protocol.error_codes import ErrorCode

EXIT_OK, EXIT_FAILED = 0, 1
Row = dict[str, Any]


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """`groupcoord groups`: the arguments of groups_args, run by `run`."""
    add_arguments(commands).set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    problem = check_usage(args)
    if problem:
        print(f"groupcoord groups: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with AdminClient(args.bootstrap_server, args.timeout / 1000) as client:
            return _dispatch(client, args)
    except AdminError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _dispatch(client: AdminClient, args: argparse.Namespace) -> int:
    if args.list:
        return _list(client, args)
    if args.describe:
        return _describe(client, args)
    if args.delete:
        return _delete(client, args)
    if args.reset_offsets:
        return _reset(client, args)
    if args.delete_offsets:
        return _delete_offsets(client, args)
    if args.transactions:
        return _transactions(client, args)
    return _remove_members(client, args)


def _transactions(client: AdminClient, args: argparse.Namespace) -> int:
    """One row per transactional id; DURATION-MS: how long its open transaction has run."""
    states = [s for s in (args.state or "").split(",") if s]
    now = int(time.time() * 1000)
    rows = [{"TRANSACTIONAL-ID": t.transactional_id, "STATE": t.state, "PRODUCER-ID": t.producer_id,
             "EPOCH": t.producer_epoch, "TIMEOUT-MS": t.timeout_ms,
             "DURATION-MS": now - t.start_ms if t.state in ops.OPEN_TRANSACTION_STATES and t.start_ms >= 0 else None,
             "PARTITIONS": t.partitions}
            for t in ops.list_transactions(client, states)]
    return _emit(args, rows, ["TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "DURATION-MS",
                              "PARTITIONS"])


def _groups_of(client: AdminClient, args: argparse.Namespace) -> list[str]:
    return [g.group for g in ops.list_groups(client)] if args.all_groups else list(args.group)


#: kafka-consumer-groups lists consumer groups only: ListGroupsOptions.forConsumerGroups keeps these
#: protocol types (an empty one is a group that only commits offsets).
CONSUMER_PROTOCOL_TYPES = ("", "consumer")
#: ConsumerGroupService.printGroupInfo: the group column is the longest id (at least 15) plus 10.
MIN_GROUP_WIDTH, GROUP_PADDING, COLUMN_WIDTH = 15, 10, 20


def _list(client: AdminClient, args: argparse.Namespace) -> int:
    states = [s for s in (args.state or "").split(",") if s]
    types = [t for t in (args.types or "").split(",") if t]
    # `--type share` lists share groups, as kafka-share-groups.sh --list does
    kept = CONSUMER_PROTOCOL_TYPES + (("share",) if "share" in {t.lower() for t in types} else ())
    listings = [g for g in ops.list_groups(client, states, types) if g.protocol_type in kept]
    if args.output == "json":
        rows = [{"GROUP": g.group, "STATE": g.state, "TYPE": g.type, "PROTOCOL-TYPE": g.protocol_type}
                for g in listings]
        return _emit(args, rows, ["GROUP", "STATE", "TYPE", "PROTOCOL-TYPE"])
    print(render_listing(listings, with_type=args.types is not None, with_state=args.state is not None), end="")
    return EXIT_OK


def render_listing(listings: Sequence[ops.GroupListing], with_type: bool, with_state: bool) -> str:
    """What kafka-consumer-groups --list prints: the ids one a line, or with --type and/or --state a
    table of fixed-width columns (GroupType and GroupState print capitalised: "Consumer", "Stable")."""
    if not (with_type or with_state):
        return "".join(f"{g.group}\n" for g in listings)
    width = max([MIN_GROUP_WIDTH] + [len(g.group) for g in listings]) + GROUP_PADDING
    header, cells = ["GROUP"], [[g.group] for g in listings]
    if with_type:
        header.append("TYPE")
        for row, g in zip(cells, listings, strict=True):
            row.append(g.type.capitalize() if g.type else "Unknown")
    if with_state:
        header.append("STATE")
        for row, g in zip(cells, listings, strict=True):
            row.append(g.state or "Unknown")

    def line(values: list[str]) -> str:
        return values[0].ljust(width) + "".join(" " + v.ljust(COLUMN_WIDTH) for v in values[1:]) + "\n"

    return line(header) + "".join(line(row) for row in cells)


def _describe(client: AdminClient, args: argparse.Namespace) -> int:
    if args.state is not None:
        return _describe_state(client, args)
    if args.members:
        return _describe_members(client, args)
    groups = _groups_of(client, args)
    share = {g.group for g in ops.list_groups(client, types=["share"])} & set(groups)
    if share:
        _describe_share(args, [ops.share_offsets(client, group) for group in groups if group in share])
        groups = [g for g in groups if g not in share]
        if not groups:
            return EXIT_OK
    rows: list[Row] = []
    for group in groups:
        description, offsets = ops.offsets_view(client, group)
        _note_inactive(args, description)
        for r in offsets:
            rows.append({"GROUP": group, "TOPIC": r.topic, "PARTITION": r.partition,
                         "CURRENT-OFFSET": r.current_offset, "LOG-END-OFFSET": r.log_end_offset, "LAG": r.lag,
                         "CONSUMER-ID": r.member.member_id if r.member else None,
                         "HOST": r.member.host if r.member else None,
                         "CLIENT-ID": r.member.client_id if r.member else None})
    return _emit(args, rows, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                              "CONSUMER-ID", "HOST", "CLIENT-ID"])


def _describe_share(args: argparse.Namespace, offsets: list[list[ops.ShareOffsetRow]]) -> None:
    """What kafka-share-groups.sh --describe prints: each share-partition's start offset and lag."""
    rows: list[Row] = [{"GROUP": r.group, "TOPIC": r.topic, "PARTITION": r.partition, "LEADER-EPOCH": r.leader_epoch,
                        "START-OFFSET": r.start_offset, "LAG": r.lag} for group in offsets for r in group]
    _emit(args, rows, ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"])


def _describe_state(client: AdminClient, args: argparse.Namespace) -> int:
    rows: list[Row] = []
    for group in _groups_of(client, args):
        d = ops.describe_group(client, group)
        rows.append({"GROUP": group, "COORDINATOR": d.coordinator, "ASSIGNMENT-STRATEGY": d.protocol,
                     "STATE": d.state, "#MEMBERS": len(d.members)})
    return _emit(args, rows, ["GROUP", "COORDINATOR", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"])


def _describe_members(client: AdminClient, args: argparse.Namespace) -> int:
    columns = ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    if args.verbose or args.output == "json":
        columns.append("ASSIGNMENT")
    rows: list[Row] = []
    for group in _groups_of(client, args):
        d = ops.describe_group(client, group)
        _note_inactive(args, d)
        for m in d.members:
            rows.append({"GROUP": group, "CONSUMER-ID": m.member_id, "GROUP-INSTANCE-ID": m.instance_id,
                         "HOST": m.host, "CLIENT-ID": m.client_id, "#PARTITIONS": len(m.partitions()),
                         "ASSIGNMENT": _format_assignment(m.assignment)})
    return _emit(args, rows, columns)


def _note_inactive(args: argparse.Namespace, d: ops.GroupDescription) -> None:
    if args.output == "table" and not d.members:
        state = "does not exist" if d.state == "Dead" else f"has no active members ({d.state})"
        print(f"Consumer group '{d.group}' {state}.", file=sys.stderr)


def _format_assignment(assignment: dict[str, list[int]]) -> str:
    return ",".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(assignment.items()))


def _delete(client: AdminClient, args: argparse.Namespace) -> int:
    results = ops.delete_groups(client, _groups_of(client, args))
    rows = [{"GROUP": g, "RESULT": "deleted" if code == ErrorCode.NONE else error_name(code)}
            for g, code in results.items()]
    _emit(args, rows, ["GROUP", "RESULT"])
    failed = {g: code for g, code in results.items() if code != ErrorCode.NONE}
    for group, code in failed.items():
        print(f"Error: group {group!r}: deletion failed: {error_name(code)}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _reset(client: AdminClient, args: argparse.Namespace) -> int:
    spec = ops.ResetSpec(to_earliest=args.to_earliest, to_latest=args.to_latest, to_offset=args.to_offset,
                         shift_by=args.shift_by,
                         to_datetime_ms=parse_datetime_ms(args.to_datetime) if args.to_datetime else None)
    rows: list[Row] = []
    for group in _groups_of(client, args):
        partitions = ops.resolve_partitions(client, group, args.topic, args.all_topics)
        plan = ops.plan_reset(client, group, partitions, spec)
        if args.execute:
            ops.commit_offsets(client, group, plan)
        rows += [{"GROUP": group, "TOPIC": t, "PARTITION": p, "NEW-OFFSET": o} for (t, p), o in sorted(plan.items())]
    if not args.execute and args.output == "table":
        print("Dry run: nothing was committed; add --execute to commit these offsets.", file=sys.stderr)
    return _emit(args, rows, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"])


def _delete_offsets(client: AdminClient, args: argparse.Namespace) -> int:
    failed = False
    rows: list[Row] = []
    for group in args.group:
        partitions = ops.resolve_partitions(client, group, args.topic, all_topics=False)
        for (topic, partition), code in sorted(ops.delete_offsets(client, group, partitions).items()):
            failed |= code != ErrorCode.NONE
            rows.append({"GROUP": group, "TOPIC": topic, "PARTITION": partition,
                         "STATUS": "Successful" if code == ErrorCode.NONE else f"Error: {error_name(code)}"})
    _emit(args, rows, ["GROUP", "TOPIC", "PARTITION", "STATUS"])
    return EXIT_FAILED if failed else EXIT_OK


def _remove_members(client: AdminClient, args: argparse.Namespace) -> int:
    failed = False
    rows: list[Row] = []
    for group in args.group:
        for instance_id, code in ops.remove_members(client, group, args.instance_id).items():
            failed |= code != ErrorCode.NONE
            rows.append({"GROUP": group, "GROUP-INSTANCE-ID": instance_id,
                         "RESULT": "removed" if code == ErrorCode.NONE else error_name(code)})
    _emit(args, rows, ["GROUP", "GROUP-INSTANCE-ID", "RESULT"])
    return EXIT_FAILED if failed else EXIT_OK


def _emit(args: argparse.Namespace, rows: list[Row], columns: Sequence[str]) -> int:
    if args.output == "json":
        print(json.dumps([{c: row.get(c) for c in columns} for row in rows], indent=2))
    else:
        print(render_table(rows, columns))
    return EXIT_OK


def render_table(rows: list[Row], columns: Sequence[str]) -> str:
    """Left-aligned columns two spaces apart; a missing value is "-" (as in Kafka's tool)."""
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)
