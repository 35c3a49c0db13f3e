"""The `groupcoord` command.

One function per subcommand adds its parser and sets `run`; to add one
(`log dump`, `groups`, `report`), write `_add_<name>(commands)` and list it in
`SUBCOMMANDS`. A `run` returns the exit code: 0 done, 1 could not run, 2 bad
usage or configuration. User-facing errors are printed, not raised.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import structlog

from coordinator.admin.groups_commands import add_parser as _add_groups
from coordinator.admin.topics_command import add_parser as _add_topics
from coordinator.cluster.commands import add_cluster_parser as _add_cluster
from coordinator.cluster.commands import add_db_parser as _add_db
from coordinator.config import ConfigError, load_config
from coordinator.log.dump import dump
from coordinator.log.segment import CorruptLogError
from coordinator.logging import configure_logging
from coordinator.records import describe_record, describe_transaction_log_record
from coordinator.security.acls_command import add_parser as _add_acls
from coordinator.security.users_command import add_parser as _add_users
from coordinator.server.app import run
from coordinator.topics import OFFSETS_TOPIC
from spark_jobs.report_command import add_parser as _add_report

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _serve(args: argparse.Namespace) -> int:
    overrides = list(args.override)
    if args.log_level:
        overrides.append(f"log.level={args.log_level}")
    try:
        config = load_config(args.config, overrides)
    except ConfigError as exc:
        print(f"groupcoord: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    configure_logging(config["log.level"])
    # What this server runs with, as Kafka logs its KafkaConfig values; secrets as [hidden].
    structlog.get_logger().info("config_loaded", settings=config.loggable())
    try:
        run(config)
    except OSError as exc:  # e.g. the port is taken or the data dir is not writable
        print(f"groupcoord: cannot start: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except CorruptLogError as exc:
        print(f"groupcoord: cannot start: {exc}\n(valid batches follow it, so this is not a torn tail. "
              f"`groupcoord log dump {exc.path}` shows the damage; start with --override "
              f"log.recovery.corruption=truncate to cut the log at byte {exc.position}, losing what follows)",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _add_serve(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = commands.add_parser("serve", help="run the server",
                                description="Run the server until SIGTERM or SIGINT.")
    serve.add_argument("--config", type=Path, metavar="FILE", help="a server.properties-style file")
    serve.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                       help="set one setting (repeatable); wins over the file and GROUPCOORD_* variables")
    serve.add_argument("--log-level", type=str.upper, choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                       help="shorthand for --override log.level=LEVEL")
    serve.set_defaults(run=_serve)


def _log_dump(args: argparse.Namespace) -> int:
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        for p in missing:
            print(f"groupcoord log dump: {p}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    def describe(topic: str, key: bytes | None, value: bytes | None) -> str | None:
        # Only __consumer_offsets and __transaction_state hold coordinator records; other topics' are the users'.
        if key is None:
            return None
        if topic == "__transaction_state":
            return describe_transaction_log_record(key, value)
        if topic != OFFSETS_TOPIC:
            return None
        return describe_record(key, value)

    problems: list[str] = []
    try:
        for path in args.paths:
            for line in dump(path, describe, records=not args.no_records, problems=problems):
                print(line)
    except BrokenPipeError:  # `groupcoord log dump ... | head`: the reader has all it wanted
        sys.stderr.close()  # no second "broken pipe" complaint when Python flushes stdout at exit
        return EXIT_OK
    if problems:
        print(f"groupcoord log dump: {len(problems)} problem(s), the first: {problems[0]}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _add_log(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    log_cmd = commands.add_parser("log", help="inspect the on-disk log",
                                  description="Inspect partition logs on disk (the server need not run).")
    actions = log_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    dump_cmd = actions.add_parser(
        "dump", help="print the batches and records of segment files",
        description="Print every batch (offsets, timestamps, producer id/epoch/sequence, compression, CRC "
                    "check) and record (offset, timestamp, key/value sizes) of a segment file, a partition "
                    "directory or a whole data directory, like Kafka's kafka-dump-log.sh. Records of "
                    "__consumer_offsets are decoded (OffsetCommit, GroupMetadata, ...). Exit code 1 if "
                    "any batch is corrupt, 2 if a path does not exist.")
    dump_cmd.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                          help="a .log segment, a partition directory (topic-N) or a data directory")
    dump_cmd.add_argument("--no-records", action="store_true", help="batches only, not their records")
    dump_cmd.set_defaults(run=_log_dump)


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [  # type: ignore[type-arg]
    _add_serve, _add_groups, _add_topics, _add_log, _add_report, _add_acls, _add_users, _add_db, _add_cluster]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="A Kafka group coordinator server.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # exits 2 with usage on bad arguments
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
