"""A cluster of groupcoord nodes over one PostgreSQL database (`coordinator.store.url=postgresql://...`).

PostgreSQL is the durable, replicated part (run it highly available: Patroni, a managed service);
the nodes hold no state of their own. Each coordinator shard (a `__consumer_offsets` partition) is
owned by one node at a time through a lease row with an epoch (`ownership.py`); its records are
Kafka record batches in a table (`store.py`), and every append checks the owner's epoch in the same
transaction, so a node that lost its lease cannot write. asyncpg is the `cluster` extra: the file
store, the default, needs none of this.
"""
