"""The PostgreSQL store on its own: migrations, group-committed appends, the epoch fence, compaction."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest

from coordinator.cluster.schema import MIGRATIONS, SCHEMA_VERSION, SchemaError, check_version, migrate
from coordinator.cluster.store import BatchStore, Fenced, PgRecordStore, StoreUnavailable, offsets_shard
from coordinator.records import Record


async def _claim(conn: Any, shard: str, node: int) -> int:
    await conn.execute("INSERT INTO gc_leases (shard) VALUES ($1) ON CONFLICT DO NOTHING", shard)
    return int(await conn.fetchval(
        "UPDATE gc_leases SET owner = $2, epoch = epoch + 1, expires_at = now() + interval '1 minute' "
        "WHERE shard = $1 RETURNING epoch", shard, node))


@pytest.fixture
async def pool(database: str):
    pool = await asyncpg.create_pool(database, min_size=1, max_size=2)
    yield pool
    await pool.close()


async def test_migrations_apply_once_and_a_newer_schema_is_refused(pool) -> None:
    async with pool.acquire() as conn:
        assert await migrate(conn) == []  # the fixture's `db init` applied them
        await check_version(conn)
        await conn.execute("INSERT INTO groupcoord_schema (version) VALUES ($1)", SCHEMA_VERSION + 1)
        with pytest.raises(SchemaError):
            await migrate(conn)
        with pytest.raises(SchemaError):
            await check_version(conn)


async def test_a_database_of_an_older_release_gets_only_the_migrations_it_lacks(postgres) -> None:
    conn = await asyncpg.connect(postgres.create_database("older_release"))
    try:
        await conn.execute("CREATE TABLE groupcoord_schema (version integer PRIMARY KEY, applied_at timestamptz "
                           "NOT NULL DEFAULT now())")
        await conn.execute(MIGRATIONS[0])  # as the first release left it
        await conn.execute("INSERT INTO groupcoord_schema (version) VALUES (1)")
        assert await migrate(conn) == list(range(2, SCHEMA_VERSION + 1))
        assert await conn.fetchval("SELECT to_regclass('gc_topics') IS NOT NULL")
        await check_version(conn)
    finally:
        await conn.close()


async def test_appends_that_arrive_together_share_one_transaction_and_load_in_order(pool) -> None:
    batches = BatchStore(pool, node_id=1)
    store = PgRecordStore(batches)
    async with pool.acquire() as conn:
        batches.epochs[offsets_shard(3)] = await _claim(conn, offsets_shard(3), 1)
        batches.epochs[offsets_shard(4)] = await _claim(conn, offsets_shard(4), 1)
    batches.start()
    writes = [store.append(3 + i % 2, [Record(f"k{i % 5}".encode(), f"v{i}".encode())]) for i in range(40)]
    await asyncio.gather(*writes)
    assert batches.transactions <= 2  # the first append's own transaction, then the rest together
    loaded = await store.load(3)
    by_key = {r.key: r.value for r in loaded}
    assert by_key == {f"k{i % 5}".encode(): f"v{i}".encode() for i in range(0, 40, 2)}
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT next_offset FROM gc_leases WHERE shard = $1", offsets_shard(3)) == 20
    await batches.close()


async def test_a_node_whose_lease_was_taken_cannot_write(pool) -> None:
    fenced: list[str] = []
    old = BatchStore(pool, node_id=1, on_fenced=fenced.append)
    shard = offsets_shard(7)
    async with pool.acquire() as conn:
        old.epochs[shard] = await _claim(conn, shard, 1)
    old.start()
    await old.append(shard, _batch(b"a", b"1"), 1)
    async with pool.acquire() as conn:  # node 2 takes the lease over (as after an expiry)
        new_epoch = await _claim(conn, shard, 2)
    new = BatchStore(pool, node_id=2)
    new.epochs[shard] = new_epoch
    new.start()
    with pytest.raises(Fenced):
        await old.append(shard, _batch(b"a", b"stale"), 1)
    assert fenced == [shard]
    await new.append(shard, _batch(b"a", b"2"), 1)
    assert [values for _, values in await new.read(shard)] == [[b"1"], [b"2"]]
    await old.close()
    await new.close()


async def test_appends_queued_behind_a_failed_write_fail_with_it_unwritten(pool) -> None:
    store = BatchStore(pool, node_id=1)
    shard = offsets_shard(11)
    async with pool.acquire() as conn:
        store.epochs[shard] = await _claim(conn, shard, 1)
    store.start()
    first = store.append(shard, _batch(b"a", b"1"), 2**31)  # a record count no integer column takes: it fails
    await asyncio.sleep(0)  # the writer takes it into a transaction
    second = store.append(shard, _batch(b"a", b"2"), 1)  # queued behind it, built on its state
    with pytest.raises(StoreUnavailable):
        await first
    with pytest.raises(StoreUnavailable):
        await second
    await store.append(shard, _batch(b"a", b"3"), 1)  # the next write, after the runtime reloaded
    assert [values for _, values in await store.read(shard)] == [[b"3"]]
    await store.close()


async def test_an_expired_lease_refuses_writes_even_before_anyone_claims_it(pool) -> None:
    store = BatchStore(pool, node_id=1)
    shard = offsets_shard(8)
    async with pool.acquire() as conn:
        store.epochs[shard] = await _claim(conn, shard, 1)
        await conn.execute("UPDATE gc_leases SET expires_at = now() - interval '1 second' WHERE shard = $1", shard)
    store.start()
    with pytest.raises(Fenced):
        await store.append(shard, _batch(b"a", b"1"), 1)
    await store.close()


async def test_compaction_keeps_each_keys_latest_record_and_drops_tombstones(pool) -> None:
    batches = BatchStore(pool, node_id=1)
    store = PgRecordStore(batches)
    async with pool.acquire() as conn:
        batches.epochs[offsets_shard(9)] = await _claim(conn, offsets_shard(9), 1)
    batches.start()
    for i in range(30):
        await store.append(9, [Record(f"k{i % 3}".encode(), f"v{i}".encode())])
    await store.append(9, [Record(b"k0", None)])
    before = await store.load(9)
    assert await batches.compact(offsets_shard(9))
    after = await store.load(9)
    assert [(r.key, r.value) for r in after] == [(r.key, r.value) for r in before if r.value is not None]
    assert len(await batches.read(offsets_shard(9))) == 1
    await store.append(9, [Record(b"k1", b"later")])  # appends go on after the compacted prefix
    assert {r.key: r.value for r in await store.load(9)} == {b"k1": b"later", b"k2": b"v29"}
    await batches.close()


def _batch(key: bytes, value: bytes) -> bytes:
    from coordinator.log.batch import build_keyed_batch

    return build_keyed_batch([(key, value)], 0)
