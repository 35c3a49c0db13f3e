"""Integration consumer group: three members of one group in one process, consuming with manual commits.

    python integration/consumers.py --bootstrap HOST:PORT --expected N [--topic orders] [--group integration]

Members (each on its own thread): a static confluent-kafka member (group.instance.id), a dynamic
confluent-kafka member and a static kafka-python member, all with the range assignor. (The kafka-python
member is static because kafka-python 3.0.12's assignors, when it leads a group that mixes static and
dynamic members in join order static-dynamic-static or dynamic-static-dynamic, drop a dynamic member:
they group members with an unsorted `itertools.groupby` and keep only the last run of each kind.) They consume until
N messages were consumed in total (or nothing new arrives for --idle-s seconds), committing after
every poll. The last line on stdout is JSON: per member, what it consumed and from which partitions.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer
from kafka import KafkaConsumer


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    consumed: int = 0
    last_progress: float = field(default_factory=time.monotonic)
    per_member: dict[str, dict] = field(default_factory=dict)

    def add(self, member: str, partition: int, count: int) -> None:
        with self.lock:
            self.consumed += count
            self.last_progress = time.monotonic()
            stats = self.per_member.setdefault(member, {"consumed": 0, "partitions": []})
            stats["consumed"] += count
            if partition not in stats["partitions"]:
                stats["partitions"].append(partition)


def confluent_member(args: argparse.Namespace, name: str, instance_id: str | None, tally: Tally,
                     done: threading.Event) -> None:
    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "client.id": name,
              "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
              "partition.assignment.strategy": "range"}
    if instance_id:
        config["group.instance.id"] = instance_id
    consumer = Consumer(config)
    consumer.subscribe([args.topic])
    try:
        while not done.is_set():
            messages = consumer.consume(500, timeout=0.2)
            good = [m for m in messages if m.error() is None]
            for m in good:
                partition = m.partition()
                assert partition is not None  # a message without an error was read from a partition
                tally.add(name, partition, 1)
            if good:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()  # the static member does not leave the group on close (KIP-345)


def kafka_python_member(args: argparse.Namespace, name: str, tally: Tally, done: threading.Event) -> None:
    consumer = KafkaConsumer(args.topic, bootstrap_servers=args.bootstrap, group_id=args.group, client_id=name,
                             enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                             group_instance_id="static-kafka-python")
    try:
        # Know the topic's partitions before the first poll joins: a leader that assigned without
        # them rejoins when they arrive, and kafka-python 3.0.12 can lose that rejoin and be expired
        # (see tests/clients/test_group_acceptance.py's kafka-python member).
        consumer.partitions_for_topic(args.topic)
        while not done.is_set():
            batches = consumer.poll(timeout_ms=200, max_records=500)
            for tp, records in batches.items():
                tally.add(name, tp.partition, len(records))
            if batches:
                consumer.commit()
    finally:
        consumer.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="integration")
    parser.add_argument("--expected", type=int, required=True, help="messages to consume in total")
    parser.add_argument("--idle-s", type=float, default=30.0, help="give up after this long without progress")
    args = parser.parse_args()

    tally, done = Tally(), threading.Event()
    members = [
        threading.Thread(target=confluent_member, args=(args, "confluent-static", "static-1", tally, done)),
        threading.Thread(target=confluent_member, args=(args, "confluent-dynamic", None, tally, done)),
        threading.Thread(target=kafka_python_member, args=(args, "kafka-python", tally, done)),
    ]
    started = time.monotonic()
    for member in members:
        member.start()
    while tally.consumed < args.expected and time.monotonic() - tally.last_progress < args.idle_s:
        time.sleep(0.1)
    done.set()
    for member in members:
        member.join(timeout=30)
    summary = {"expected": args.expected, "consumed": tally.consumed,
               "seconds": round(time.monotonic() - started, 2),
               "members": {k: {**v, "partitions": sorted(v["partitions"])}
                           for k, v in sorted(tally.per_member.items())}}
    print(json.dumps(summary))
    if tally.consumed < args.expected:
        print(f"consumers: only {tally.consumed} of {args.expected} messages consumed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
