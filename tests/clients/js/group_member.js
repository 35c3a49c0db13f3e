#!/usr/bin/env node
// kafkajs consumer-group members, for tests/clients/test_group_acceptance.py.
//
//   node group_member.js PORT TOPIC GROUP [MEMBERS]
//
// Starts MEMBERS (default 3) kafkajs consumers of TOPIC in GROUP against 127.0.0.1:PORT and prints
// one JSON line on stdout each time one of them completes a join:
//   {"member": i, "memberId": "...", "assignment": [partitions of TOPIC]}
// It runs until stdin closes (the test closes it, or dies), then disconnects every consumer
// (dynamic members leave the group) and exits 0. On failure it prints {"error": {...}} and exits 1.
// kafkajs's own log lines go to stderr so stdout stays parseable.
'use strict';

const { startWatchdog, makeKafka } = require('./common');

const [port, topic, groupId, membersArg] = process.argv.slice(2);
if (!port || !topic || !groupId) {
  process.stderr.write('usage: node group_member.js PORT TOPIC GROUP [MEMBERS]\n');
  process.exit(64);
}
const members = Number(membersArg || 3);

const watchdog = startWatchdog(60000, 'still running');

async function main() {
  const kafka = makeKafka(port, 'groupcoord-kafkajs-group-test', 5);
  const consumers = [];
  for (let i = 0; i < members; i++) {
    // kafkajs heartbeats from its fetch loop: an idle fetch waits maxWaitTimeInMs (default 5 s) before
    // the next heartbeat can report a rebalance, so a short wait keeps joins from lagging seconds behind.
    const consumer = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 1000, rebalanceTimeout: 10000, maxWaitTimeInMs: 500 });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      process.stdout.write(JSON.stringify({
        member: i,
        memberId: payload.memberId,
        assignment: (payload.memberAssignment[topic] || []).slice().sort((a, b) => a - b),
      }) + '\n');
    });
    consumers.push(consumer);
  }
  for (const consumer of consumers) {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async () => {} });
  }
  await new Promise((resolve) => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
  await Promise.all(consumers.map((c) => c.disconnect()));
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
