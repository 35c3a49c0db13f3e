"""Integration producer (confluent-kafka): create the topic if needed, produce keyed messages, print a summary.

    python integration/producer.py --bootstrap HOST:PORT [--topic orders] [--partitions 6] [--messages 5000]
                                   [--create-topic-only]

The last line on stdout is JSON: {"produced": N, "topic": ..., "end_offsets": {partition: offset}}.
"""

from __future__ import annotations

import argparse
import json
import sys

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic]
    try:
        future.result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
            raise


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--create-topic-only", action="store_true", help="create the topic, produce nothing")
    args = parser.parse_args()

    ensure_topic(args.bootstrap, args.topic, args.partitions)
    if args.create_topic_only:
        print(json.dumps({"topic": args.topic, "partitions": args.partitions}))
        return 0
    producer = Producer({"bootstrap.servers": args.bootstrap, "enable.idempotence": True, "acks": "all",
                         "compression.type": "lz4", "linger.ms": 5})
    end_offsets: dict[int, int] = {}
    failures: list[str] = []

    def delivered(err, msg) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            end_offsets[msg.partition()] = max(end_offsets.get(msg.partition(), 0), msg.offset() + 1)

    for i in range(args.messages):
        producer.produce(args.topic, key=f"customer-{i % 97}".encode(), value=f"order {i}".encode(),
                         on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining or failures:
        print(f"producer: {remaining} undelivered, {len(failures)} failed: {failures[:3]}", file=sys.stderr)
        return 1
    print(json.dumps({"produced": args.messages, "topic": args.topic,
                      "end_offsets": {str(p): o for p, o in sorted(end_offsets.items())}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
