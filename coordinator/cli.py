"""The `groupcoord` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coordinator.config import ConfigError, load_config


def _serve(args: argparse.Namespace) -> int:
    overrides = list(args.override)
    if args.log_level:
        overrides.append(f"log.level={args.log_level.upper()}")
    try:
        config = load_config(args.config, overrides)
    except ConfigError as exc:
        print(f"groupcoord: configuration error: {exc}", file=sys.stderr)
        return 2
    from coordinator.logging import configure_logging
    from coordinator.server.app import run

    configure_logging(config["log.level"])
    try:
        run(config)
    except OSError as exc:
        print(f"groupcoord: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupcoord", description="A Kafka group coordinator server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the server")
    serve.add_argument("--config", type=Path, help="a server.properties-style file")
    serve.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                       help="set one setting (repeatable); wins over the file and GROUPCOORD_* variables")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error", "DEBUG", "INFO", "WARNING", "ERROR"])
    serve.set_defaults(run=_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
