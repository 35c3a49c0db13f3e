"""The cluster's schema in PostgreSQL, applied as numbered migrations (`groupcoord db init`).

`groupcoord_schema` records which migrations ran; each runs once, in its own transaction, under an
advisory lock so that nodes starting together do not race. A node refuses a database whose schema
is newer than it knows (a newer release migrated it) or older (run `groupcoord db init`).
"""

from __future__ import annotations

from typing import Any

import structlog

log = structlog.get_logger()

# Any constant both sides agree on: the advisory lock held while migrating.
MIGRATION_LOCK = 0x67637364  # "gcsd"

MIGRATIONS: tuple[str, ...] = (
    # 1: the cluster's id, nodes with heartbeats, one lease per shard, and the shards' record batches.
    """
    CREATE TABLE gc_cluster (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        id        text NOT NULL                  -- the cluster id every node reports (Metadata, DescribeCluster)
    );
    CREATE TABLE gc_nodes (
        node_id      integer PRIMARY KEY,
        host         text NOT NULL,
        port         integer NOT NULL,
        started_at   timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        expires_at   timestamptz NOT NULL
    );
    CREATE TABLE gc_leases (
        shard       text PRIMARY KEY,            -- topic-partition, as Kafka names a TopicPartition
        owner       integer,                     -- NULL: free
        epoch       bigint NOT NULL DEFAULT 0,   -- bumped by every claim: the fence
        expires_at  timestamptz NOT NULL DEFAULT '-infinity',
        next_offset bigint NOT NULL DEFAULT 0,   -- the offset the next appended record gets
        changed_at  timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE gc_batches (
        shard        text NOT NULL,
        base_offset  bigint NOT NULL,
        record_count integer NOT NULL,
        batch        bytea NOT NULL,             -- one Kafka record batch v2, as on the wire and on disk
        appended_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (shard, base_offset)
    );
    """,
    # 2: the user topics every node knows (created on one node, learnt by the others).
    """
    CREATE TABLE gc_topics (
        name       text PRIMARY KEY,
        partitions integer NOT NULL,
        configs    jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
    );
    """,
    # 3: producer ids handed out in blocks to the nodes, so that ids stay unique across the cluster
    # (Kafka's ProducerIdManager takes its blocks from the controller); user-topic partitions in
    # PostgreSQL (their batches and leases are rows of gc_batches and gc_leases, shard
    # `<topic>-<partition>`, as `__transaction_state` partitions are shards like the others): where each
    # partition's log starts once retention moved it, and the topics deleted on one node for the others
    # to delete too (until the name is created again).
    """
    CREATE TABLE gc_producer_ids (
        singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        next_block bigint NOT NULL               -- the first id of the next block handed out
    );
    INSERT INTO gc_producer_ids (next_block) VALUES (0);
    CREATE TABLE gc_log_starts (
        shard     text PRIMARY KEY,
        log_start bigint NOT NULL
    );
    CREATE TABLE gc_deleted_topics (
        name       text PRIMARY KEY,
        deleted_at timestamptz NOT NULL DEFAULT now()
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaError(Exception):
    """The database's schema is not the one this node runs with."""


async def current_version(conn: Any) -> int:
    exists = await conn.fetchval("SELECT to_regclass('groupcoord_schema') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM groupcoord_schema"))


async def migrate(conn: Any) -> list[int]:
    """Apply the migrations the database lacks; returns the versions applied."""
    applied: list[int] = []
    await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS groupcoord_schema ("
                           " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        version = await current_version(conn)
        if version > SCHEMA_VERSION:
            raise SchemaError(f"the database's schema is version {version}, newer than this release's "
                              f"{SCHEMA_VERSION}")
        for number, statement in enumerate(MIGRATIONS[version:], start=version + 1):
            async with conn.transaction():
                await conn.execute(statement)
                await conn.execute("INSERT INTO groupcoord_schema (version) VALUES ($1)", number)
            log.info("schema_migrated", version=number)
            applied.append(number)
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
    return applied


async def check_version(conn: Any) -> None:
    version = await current_version(conn)
    if version != SCHEMA_VERSION:
        raise SchemaError(f"the database's schema is version {version}, this release needs {SCHEMA_VERSION}: "
                          f"run `groupcoord db init --store-url URL`")
