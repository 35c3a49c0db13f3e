#!/usr/bin/env node
// kafkajs transactions against one broker, for tests/clients/test_transactions.py.
//
//   node transactions.js PORT TOPIC GROUP
//
// Creates TOPIC (1 partition); one transaction sends "committed" and offset 3 of TOPIC-0 for GROUP
// (sendOffsets = AddOffsetsToTxn + TxnOffsetCommit), commits; a second sends "aborted", aborts.
// A read_committed consumer (kafkajs's default) then reads TOPIC. Prints one JSON object:
//   {"values": [strings read], "offset": "<GROUP's committed offset of TOPIC-0>"}
// On failure {"error": {"name", "message"}} and exit 1.
'use strict';

const { startWatchdog, makeKafka } = require('./common');

const [port, topic, group] = process.argv.slice(2);
const watchdog = startWatchdog(45000, 'no result within');

async function main() {
  const kafka = makeKafka(port, 'groupcoord-kafkajs-txn', 5);
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });

  const producer = kafka.producer({ transactionalId: `${topic}-js`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const committed = await producer.transaction();
  await committed.send({ topic, messages: [{ value: 'committed', partition: 0 }] });
  await committed.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '3' }] }] });
  await committed.commit();
  const aborted = await producer.transaction();
  await aborted.send({ topic, messages: [{ value: 'aborted', partition: 0 }] });
  await aborted.abort();
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${group}-reader` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values = [];
  await consumer.run({ eachMessage: async ({ message }) => { values.push(message.value.toString()); } });
  await new Promise((resolve) => setTimeout(resolve, 6000));
  await consumer.disconnect();
  const [offsets] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  await admin.disconnect();
  return { values, offset: offsets.partitions[0].offset };
}

main().then(
  (result) => { clearTimeout(watchdog); process.stdout.write(JSON.stringify(result) + '\n'); process.exit(0); },
  (error) => {
    clearTimeout(watchdog);
    process.stdout.write(JSON.stringify({ error: { name: error.name, message: error.message } }) + '\n');
    process.exit(1);
  },
);
