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

from coordinator.admin.groups_args import add_parser as _add_groups
from coordinator.config import ConfigError, load_config

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
    # Imported late: a configuration error is reported without loading the codec and server.
    from coordinator.logging import configure_logging
    from coordinator.server.app import run

    configure_logging(config["log.level"])
    try:
        run(config)
    except OSError as exc:  # e.g. the port is taken or the data dir is not writable
        print(f"groupcoord: cannot start: {exc}", file=sys.stderr)
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


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_serve, _add_groups]  # type: ignore[type-arg]


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
