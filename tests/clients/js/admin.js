#!/usr/bin/env node
// kafkajs admin round trip against one broker, for tests/clients/test_kafkajs.py.
//
//   node admin.js PORT TOPIC [PARTITIONS]
//
// Connects to 127.0.0.1:PORT, creates TOPIC with PARTITIONS (default 6) partitions,
// lists topics and fetches TOPIC's metadata, then prints one JSON object on stdout:
//   {"created": bool, "topics": [names], "metadata": {"topics": [{"name", "partitions": [...]}]}}
// On failure it prints {"error": {"name", "message", ...}} on stdout and exits 1.
// kafkajs's own log lines go to stderr so stdout stays parseable.
'use strict';

const { startWatchdog, makeKafka } = require('./common');

const [port, topic, partitionsArg] = process.argv.slice(2);
if (!port || !topic) {
  process.stderr.write('usage: node admin.js PORT TOPIC [PARTITIONS]\n');
  process.exit(64);
}
const numPartitions = Number(partitionsArg || 6);

const watchdog = startWatchdog(45000, 'no result within');

async function main() {
  const kafka = makeKafka(port, 'groupcoord-kafkajs-test', 2);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions, replicationFactor: 1 }],
      waitForLeaders: true,
      timeout: 10000,
    });
    const topics = await admin.listTopics();
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    process.stdout.write(JSON.stringify({ created, topics, metadata }) + '\n');
  } finally {
    await admin.disconnect();
  }
}

main().then(
  () => {
    clearTimeout(watchdog);
    process.exit(0);
  },
  (err) => {
    clearTimeout(watchdog);
    const error = { name: err && err.name, message: err && err.message, type: err && err.type, code: err && err.code };
    process.stdout.write(JSON.stringify({ error }) + '\n');
    process.stderr.write(String(err && err.stack) + '\n');
    process.exit(1);
  },
);
