"""`groupcoord users`: add, remove and list the users SASL clients log in as.

    groupcoord users add alice --password-stdin [--mechanism SCRAM-SHA-512 ...] [--iterations 8192]
    groupcoord users remove alice
    groupcoord users list [--output json]

The file is the server's `sasl.credentials.file` (default `<log.dirs>/credentials`), found from
the same `--config`, `GROUPCOORD_*` variables and `--override` as `groupcoord serve`, or named
with `--file`. It is rewritten atomically; a running server picks the change up at its next SASL
handshake. Only salted keys are stored, never the password. Without `--password` or
`--password-stdin` the password is prompted for (twice) on the terminal.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path

from coordinator.config import ConfigError, load_config
from coordinator.security.credentials import (
    MECHANISMS,
    MIN_ITERATIONS,
    Credentials,
    CredentialsError,
    credentials_path,
    locked,
    make_user,
    read_credentials,
    write_credentials,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser("users", help="add, remove and list SASL users",
                            description="Manage the users SASL clients (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) "
                                        "log in as. "
                                        "Salted keys are stored, never passwords; a running server sees "
                                        "changes at its next SASL handshake.")
    p.add_argument("--file", type=Path, metavar="PATH",
                   help="the credentials file (default: the server's sasl.credentials.file, else "
                        "<log.dirs>/credentials, from --config/--override/GROUPCOORD_* as for serve)")
    p.add_argument("--config", type=Path, metavar="FILE", help="the server's server.properties-style file")
    p.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="a server setting, as for serve (repeatable)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    add = actions.add_parser("add", help="add a user, or replace an existing user's credentials")
    add.add_argument("name", metavar="NAME")
    secret = add.add_mutually_exclusive_group()
    secret.add_argument("--password", metavar="PASSWORD",
                        help="the password (visible to other local users in the process list; prefer "
                             "--password-stdin or the prompt)")
    secret.add_argument("--password-stdin", action="store_true", help="read the password from stdin's first line")
    add.add_argument("--mechanism", action="append", choices=MECHANISMS, dest="mechanisms", metavar="MECHANISM",
                     help=f"repeatable; one of {', '.join(MECHANISMS)} (default: all)")
    add.add_argument("--iterations", type=int, default=MIN_ITERATIONS,
                     help=f"PBKDF2 iterations (default and minimum {MIN_ITERATIONS})")
    add.set_defaults(run=_add)

    remove = actions.add_parser("remove", help="remove a user")
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(run=_remove)

    listing = actions.add_parser("list", help="list users and their mechanisms (never secrets)")
    listing.add_argument("--output", choices=["table", "json"], default="table")
    listing.set_defaults(run=_list)


def _path(args: argparse.Namespace) -> Path:
    if args.file is not None:
        return args.file
    return credentials_path(load_config(args.config, args.override))


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        return args.password
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(f"Password for {args.name}: ")
    if getpass.getpass("Again: ") != first:
        raise CredentialsError("the passwords do not match")
    return first


def _add(args: argparse.Namespace) -> int:
    def change(credentials: Credentials) -> tuple[Credentials, str]:
        user = make_user(args.name, _password(args), tuple(args.mechanisms or MECHANISMS), args.iterations)
        verb = "updated" if args.name in credentials.users else "added"
        return Credentials({**credentials.users, args.name: user}), f"{verb} user {args.name!r} " \
                                                                      f"({','.join(user.mechanisms)})"
    return _update(args, change)


def _remove(args: argparse.Namespace) -> int:
    def change(credentials: Credentials) -> tuple[Credentials, str]:
        if args.name not in credentials.users:
            raise CredentialsError(f"no user {args.name!r}")
        return Credentials({n: u for n, u in credentials.users.items() if n != args.name}), \
            f"removed user {args.name!r}"
    return _update(args, change)


def _update(args: argparse.Namespace, change) -> int:  # type: ignore[no-untyped-def]
    try:
        path = _path(args)
        with locked(path):
            updated, message = change(read_credentials(path))
            write_credentials(path, updated)
    except ConfigError as exc:
        print(f"groupcoord users: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (CredentialsError, OSError) as exc:
        print(f"groupcoord users: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"{message} in {path}")
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    try:
        path = _path(args)
        credentials = read_credentials(path)
    except ConfigError as exc:
        print(f"groupcoord users: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CredentialsError as exc:
        print(f"groupcoord users: {exc}", file=sys.stderr)
        return EXIT_FAILED
    rows = [{"user": name, "mechanisms": list(credentials.users[name].mechanisms)}
            for name in sorted(credentials.users)]
    if args.output == "json":
        print(json.dumps(rows))
        return EXIT_OK
    width = max([len("USER")] + [len(r["user"]) for r in rows])
    print(f"{'USER':<{width}}  MECHANISMS")
    for row in rows:
        print(f"{row['user']:<{width}}  {','.join(row['mechanisms'])}")
    return EXIT_OK
