"""`groupcoord topics --alter --topic T --partitions N`: kafka-topics.sh's way of growing topics.

As Kafka's TopicCommand: `--topic` is a regular expression matched against the whole topic name (Java's
IncludeList), internal topics left out; no match is an error unless `--if-exists`; every matching topic
is grown with one CreatePartitions request, and a refusal prints the broker's message. Success prints
nothing, as Kafka's tool does.
"""

from __future__ import annotations

import argparse
import re
import sys

from coordinator.admin.client import AdminClient, AdminError, error_name
from coordinator.admin.groups_args import EXIT_USAGE
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import CreatePartitionsRequest

EXIT_OK, EXIT_FAILED = 0, 1


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser("topics", help="alter topics, like kafka-topics.sh",
                            description="Grow topics: --alter --topic REGEX --partitions N (kafka-topics.sh's words).")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--alter", action="store_true", help="alter the number of partitions of the matching topics")
    p.add_argument("--topic", metavar="REGEX", help="the topic(s): a regular expression matching whole names")
    p.add_argument("--partitions", type=int, metavar="N", help="the new partition count")
    p.add_argument("--if-exists", action="store_true", help="no error when no topic matches")
    p.add_argument("--timeout", type=int, default=30000, metavar="MS", help="per request (default 30000)")
    p.set_defaults(run=run)


def _usage_problem(args: argparse.Namespace) -> str | None:
    if not args.alter:
        return "Command must include exactly one action: --alter"
    if args.topic is None:
        return "--topic is required with --alter"
    if args.partitions is None:
        return "--partitions is required with --alter (topic configs: kafka-configs)"
    if args.partitions < 1:
        return "The partitions must be greater than 0"
    return None


def run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        print(f"groupcoord topics: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        pattern = re.compile(args.topic)
    except re.error as exc:
        print(f"groupcoord topics: --topic {args.topic!r} is not a regular expression: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with AdminClient(args.bootstrap_server, args.timeout / 1000) as client:
            return _alter(client, args, pattern)
    except AdminError as exc:
        print(f"Error while executing topic command : {exc}", file=sys.stderr)
        return EXIT_FAILED


def _alter(client: AdminClient, args: argparse.Namespace, pattern: re.Pattern[str]) -> int:
    topics = sorted(name for name in client.metadata(None) if pattern.fullmatch(name) and not name.startswith("__"))
    if not topics:
        if args.if_exists:
            return EXIT_OK
        raise AdminError(f"Topic '{args.topic}' does not exist as expected")
    conn = client.any_broker()
    Grow = CreatePartitionsRequest.CreatePartitionsTopic
    request = CreatePartitionsRequest(topics=[Grow(name=t, count=args.partitions, assignments=None) for t in topics],
                                      timeout_ms=args.timeout, validate_only=False)
    response = conn.request(ApiKey.CREATE_PARTITIONS, request, conn.version_for(ApiKey.CREATE_PARTITIONS))
    failures = [r for r in response.results if r.error_code != ErrorCode.NONE]
    for result in failures:
        print(f"Error while executing topic command : {result.error_message or error_name(result.error_code)}",
              file=sys.stderr)
    return EXIT_FAILED if failures else EXIT_OK
