"""A consume-transform-produce exactly-once worker (confluent-kafka), run as its own process.

    python -m tests.clients.eos_worker BOOTSTRAP GROUP TRANSACTIONAL_ID INPUT OUTPUT

Each poll's records become one transaction: the transformed records ("<partition>:<offset>" of the
input) go to OUTPUT, the consumer's positions go in with send_offsets_to_transaction, then commit.
An abortable error aborts and rewinds to the group's committed offsets; a fatal one (fenced) exits 3.
It sleeps inside each transaction, so a SIGKILL of the test tends to land in an open transaction.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

IN_TXN_PAUSE_S = 0.05


def rewind(consumer: Consumer) -> None:
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=10):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def main() -> int:
    bootstrap, group, transactional_id, source, sink = sys.argv[1:6]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 30000})
    producer.init_transactions(30)
    consumer.subscribe([source])
    while True:
        records = consumer.consume(num_messages=50, timeout=0.5)
        records = [r for r in records if r.error() is None]
        if not records:
            continue
        try:
            producer.begin_transaction()
            for r in records:
                producer.produce(sink, key=r.key(), value=f"{r.partition()}:{r.offset()}".encode())
            time.sleep(IN_TXN_PAUSE_S)
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal():
                print(f"fatal: {error}", file=sys.stderr, flush=True)
                return 3
            if error.retriable() and not error.txn_requires_abort() and retry_commit(producer):
                continue
            print(f"aborting: {error}", file=sys.stderr, flush=True)
            abort(producer)
            rewind(consumer)


def retry_commit(producer: Producer) -> bool:
    """A commit that failed retriably (say the server restarted) may be retried; False: give up."""
    for _ in range(10):
        try:
            producer.commit_transaction(30)
            return True
        except KafkaException as exc:
            if not exc.args[0].retriable() or exc.args[0].txn_requires_abort():
                return False
    return False


def abort(producer: Producer) -> None:
    for _ in range(10):
        try:
            producer.abort_transaction(30)
            return
        except KafkaException as exc:
            if exc.args[0].fatal():
                raise
            time.sleep(0.5)
    raise RuntimeError("could not abort the transaction")


if __name__ == "__main__":
    sys.exit(main())
