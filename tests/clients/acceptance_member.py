"""One consumer-group member for tests/clients/test_group_acceptance.py, run as its own process.

    python acceptance_member.py BOOTSTRAP TOPIC GROUP CLIENT_ID

A confluent-kafka consumer with manual commits.  It prints one JSON object per line on stdout,
flushed before anything that depends on it happens:

    {"event": "assigned", "partitions": [0, 1]}          (also "revoked")
    {"event": "consumed", "records": [[partition, offset], ...]}   printed BEFORE they are committed
    {"event": "committed", "offsets": {"0": 17, ...}}     after a successful synchronous commit
    {"event": "commit_failed", "error": "..."}

So a record that the group committed past was always printed as consumed by someone first: the
test can check at-least-once delivery even for a member that is SIGKILLed.  SIGTERM stops it
cleanly (close() sends LeaveGroup).  Each non-empty batch is followed by a short pause so that
10,000 messages take long enough for the test to kill a member in the middle of them.
"""

from __future__ import annotations

import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

BATCH = 100
PAUSE_S = 0.02  # per non-empty batch: at most ~5,000 messages/s per member
SESSION_TIMEOUT_MS = 6000


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    bootstrap, topic, group, client_id = sys.argv[1:5]
    stopping = False

    def on_sigterm(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_sigterm)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_TIMEOUT_MS, "heartbeat.interval.ms": 1000,
        "partition.assignment.strategy": "range", "socket.timeout.ms": 10_000,
    })
    consumer.subscribe(
        [topic],
        on_assign=lambda c, parts: emit(event="assigned", partitions=sorted(p.partition for p in parts)),
        on_revoke=lambda c, parts: emit(event="revoked", partitions=sorted(p.partition for p in parts)),
    )
    committed: dict[int, int] = {}
    try:
        while not stopping:
            messages = consumer.consume(BATCH, 0.2)
            records = [[m.partition(), m.offset()] for m in messages if m.error() is None]
            if records:
                emit(event="consumed", records=records)
            assignment = consumer.assignment()
            positions = {tp.partition: tp.offset for tp in consumer.position(assignment)} if assignment else {}
            pending = {p: o for p, o in positions.items() if o >= 0 and committed.get(p) != o}
            if pending:
                try:
                    result = consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in pending.items()],
                                             asynchronous=False)
                    errors = [str(tp.error) for tp in result or [] if tp.error is not None]
                    if errors:
                        raise KafkaException(errors[0])
                except KafkaException as exc:  # e.g. a rebalance in progress: commit again next round
                    emit(event="commit_failed", error=str(exc))
                else:
                    committed.update(pending)
                    emit(event="committed", offsets={str(p): o for p, o in pending.items()})
            if records:
                time.sleep(PAUSE_S)
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
