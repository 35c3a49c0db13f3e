"""The exactly-once worker of tests/clients/eos_worker.py, written with kafka-python 3.0.

    python -m tests.clients.eos_worker_kafka_python BOOTSTRAP GROUP TRANSACTIONAL_ID INPUT OUTPUT

Same records and protocol as the confluent-kafka worker: one transaction per poll, offsets sent with
the consumer's group metadata (KIP-447), abort and rewind on an abortable error, exit 3 when fenced.
"""

from __future__ import annotations

import sys
import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

IN_TXN_PAUSE_S = 0.05


def main() -> int:
    bootstrap, group, transactional_id, source, sink = sys.argv[1:6]
    consumer = KafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed",
                             session_timeout_ms=6000, heartbeat_interval_ms=500)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=transactional_id,
                             transaction_timeout_ms=30000)
    producer.init_transactions()
    while True:
        batches = consumer.poll(timeout_ms=500, max_records=50)
        if not batches:
            continue
        try:
            producer.begin_transaction()
            for records in batches.values():
                for r in records:
                    producer.send(sink, key=r.key, value=f"{r.partition}:{r.offset}".encode())
            time.sleep(IN_TXN_PAUSE_S)
            positions = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in consumer.assignment()}
            producer.send_offsets_to_transaction(positions, consumer.group_metadata())
            producer.commit_transaction()
        except ProducerFencedError as exc:
            print(f"fatal: {exc!r}", file=sys.stderr, flush=True)
            return 3
        except KafkaError as exc:
            print(f"aborting: {exc!r}", file=sys.stderr, flush=True)
            producer.abort_transaction()
            committed = {tp: consumer.committed(tp) for tp in consumer.assignment()}
            for tp, offset in committed.items():
                consumer.seek(tp, offset if offset is not None else 0)


if __name__ == "__main__":
    sys.exit(main())
