"""`groupcoord db init` and `groupcoord cluster status`: the cluster's database, from the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from coordinator.cluster.schema import SCHEMA_VERSION, SchemaError, current_version, migrate

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
URL_ENV = "GROUPCOORD_COORDINATOR_STORE_URL"


def _url(args: argparse.Namespace) -> str | None:
    url: str | None = args.store_url or os.environ.get(URL_ENV)
    return url


async def _connect(url: str) -> Any:
    import asyncpg

    return await asyncpg.connect(url, timeout=10)


def _db_init(args: argparse.Namespace) -> int:
    url = _url(args)
    if not url:
        print(f"groupcoord db init: give --store-url postgresql://... (or set {URL_ENV})", file=sys.stderr)
        return EXIT_USAGE

    async def run() -> list[int]:
        conn = await _connect(url)
        try:
            return await migrate(conn)
        finally:
            await conn.close()

    try:
        applied = asyncio.run(run())
    except (OSError, SchemaError) as exc:
        print(f"groupcoord db init: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # asyncpg's errors (authentication, missing database) are not OSErrors
        print(f"groupcoord db init: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if applied:
        print(f"schema migrated to version {applied[-1]} (applied: {', '.join(map(str, applied))})")
    else:
        print(f"schema already at version {SCHEMA_VERSION}")
    return EXIT_OK


_STATUS_LEASES = """
    SELECT l.shard, l.owner, l.epoch, l.expires_at > now() AS live, l.next_offset,
           (SELECT count(*) FROM gc_batches b WHERE b.shard = l.shard) AS batches,
           extract(epoch FROM now() - l.changed_at) * 1000 AS since_change_ms
    FROM gc_leases l ORDER BY l.shard"""
_STATUS_NODES = """
    SELECT node_id, host, port, expires_at > now() AS live,
           extract(epoch FROM now() - heartbeat_at) * 1000 AS heartbeat_age_ms,
           extract(epoch FROM now() - started_at) * 1000 AS up_ms
    FROM gc_nodes ORDER BY node_id"""


async def cluster_status(url: str) -> dict[str, Any]:
    """Nodes (live or not, heartbeat age), every lease (owner, epoch, log end, batches kept) and each
    node's share: what `groupcoord cluster status` prints."""
    conn = await _connect(url)
    try:
        version = await current_version(conn)
        if version == 0:
            raise SchemaError("no groupcoord schema in this database: run `groupcoord db init`")
        nodes = [dict(row) for row in await conn.fetch(_STATUS_NODES)]
        leases = [dict(row) for row in await conn.fetch(_STATUS_LEASES)]
    finally:
        await conn.close()
    for entry in nodes + leases:
        for key, value in entry.items():
            if hasattr(value, "is_finite") or type(value).__name__ == "Decimal":
                entry[key] = round(float(value), 1)
    owned: dict[int, int] = {}
    for lease in leases:
        if lease["live"] and lease["owner"] is not None:
            owned[lease["owner"]] = owned.get(lease["owner"], 0) + 1
    for node in nodes:
        node["shards"] = owned.get(node["node_id"], 0)
    return {"schema_version": version, "nodes": nodes, "leases": leases,
            "unowned": sum(1 for lease in leases if not lease["live"] or lease["owner"] is None)}


def _cluster_status(args: argparse.Namespace) -> int:
    url = _url(args)
    if not url:
        print(f"groupcoord cluster status: give --store-url postgresql://... (or set {URL_ENV})", file=sys.stderr)
        return EXIT_USAGE
    try:
        status = asyncio.run(cluster_status(url))
    except Exception as exc:  # unreachable, no schema, authentication: a readable line, not a trace
        print(f"groupcoord cluster status: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps(status, default=str))
        return EXIT_OK
    print(f"schema version {status['schema_version']}; {status['unowned']} shard(s) without a live owner")
    print(f"{'NODE':>6} {'ADDRESS':<24} {'LIVE':<5} {'SHARDS':>6} {'HEARTBEAT AGE MS':>17}")
    for node in status["nodes"]:
        print(f"{node['node_id']:>6} {node['host'] + ':' + str(node['port']):<24} {str(node['live']).lower():<5} "
              f"{node['shards']:>6} {node['heartbeat_age_ms']:>17}")
    print(f"{'SHARD':<26} {'OWNER':>5} {'EPOCH':>6} {'LIVE':<5} {'LOG END':>9} {'BATCHES':>8}")
    for lease in status["leases"]:
        owner = "-" if lease["owner"] is None else str(lease["owner"])
        print(f"{lease['shard']:<26} {owner:>5} {lease['epoch']:>6} {str(lease['live']).lower():<5} "
              f"{lease['next_offset']:>9} {lease['batches']:>8}")
    return EXIT_OK


def _store_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store-url", metavar="URL",
                        help=f"the cluster's database, postgresql://... (default: ${URL_ENV})")


def add_db_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    db = commands.add_parser("db", help="the cluster's PostgreSQL database",
                             description="Manage the PostgreSQL database of a groupcoord cluster.")
    actions = db.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser("init", help="create the schema, or migrate it to this release's version",
                              description="Apply the schema migrations the database lacks (safe to repeat; "
                                          "nodes starting at the same time wait for each other).")
    _store_url_argument(init)
    init.set_defaults(run=_db_init)


def add_cluster_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    cluster = commands.add_parser("cluster", help="inspect a groupcoord cluster",
                                  description="Inspect the nodes and leases of a groupcoord cluster.")
    actions = cluster.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="nodes, leases, epochs, log ends",
                                description="Print the nodes (live, heartbeat age, shards owned) and every "
                                            "shard's lease (owner, epoch, log end offset, batches kept).")
    _store_url_argument(status)
    status.add_argument("--json", action="store_true", help="one JSON document instead of tables")
    status.set_defaults(run=_cluster_status)
