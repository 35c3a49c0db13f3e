"""The exactly-once worker of tests/clients/eos_worker.py, written with aiokafka (v0 transactional APIs).

    python -m tests.clients.eos_worker_aiokafka BOOTSTRAP GROUP TRANSACTIONAL_ID INPUT OUTPUT

One transaction per poll; aiokafka's TxnOffsetCommit v0 carries no member fields, so the group's
generation is not checked (no KIP-447 fencing); abort and rewind on an error, exit 3 when fenced.
"""

from __future__ import annotations

import asyncio
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError, ProducerFenced

IN_TXN_PAUSE_S = 0.05


async def main() -> int:
    bootstrap, group, transactional_id, source, sink = sys.argv[1:6]
    consumer = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                                auto_offset_reset="earliest", isolation_level="read_committed",
                                session_timeout_ms=6000, heartbeat_interval_ms=500)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                                transaction_timeout_ms=30000)
    await producer.start()
    await consumer.start()
    while True:
        batches = await consumer.getmany(timeout_ms=500, max_records=50)
        if not batches:
            continue
        try:
            async with producer.transaction():
                for records in batches.values():
                    for r in records:
                        await producer.send(sink, key=r.key, value=f"{r.partition}:{r.offset}".encode())
                await asyncio.sleep(IN_TXN_PAUSE_S)
                positions = {tp: await consumer.position(tp) for tp in consumer.assignment()}
                await producer.send_offsets_to_transaction(positions, group)
        except ProducerFenced as exc:
            print(f"fatal: {exc!r}", file=sys.stderr, flush=True)
            return 3
        except KafkaError as exc:  # the context manager aborted the transaction
            print(f"aborted: {exc!r}", file=sys.stderr, flush=True)
            for tp in consumer.assignment():
                offset = await consumer.committed(tp)
                consumer.seek(tp, offset if offset is not None else 0)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
