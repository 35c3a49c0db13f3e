#!/usr/bin/env node
// kafkajs on the data plane, for tests/clients/test_log_acceptance.py.
//
//   node keyed_log.js produce PORT TOPIC COUNT [none|gzip]
//       sends COUNT messages (key "k<i mod 97>", value "<i>") in order, acks=-1, 500 per request;
//       prints {"produced": COUNT}
//   node keyed_log.js consume PORT TOPIC COUNT GROUP
//       reads TOPIC from the beginning in GROUP until COUNT messages arrived;
//       prints {"messages": [[partition, offset, key, value], ...]} in arrival order
//
// On failure it prints {"error": {...}} and exits 1; kafkajs's own logs go to stderr.
'use strict';

const { CompressionTypes } = require('kafkajs');
const { startWatchdog, makeKafka } = require('./common');

const [mode, port, topic, countArg, extra] = process.argv.slice(2);
const count = Number(countArg);
if (!['produce', 'consume'].includes(mode) || !port || !topic || !(count > 0)) {
  process.stderr.write('usage: node keyed_log.js produce|consume PORT TOPIC COUNT [gzip|GROUP]\n');
  process.exit(64);
}
const BATCH = 500;

const watchdog = startWatchdog(80000, `${mode} still running`);

async function produce(kafka) {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const compression = extra === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
  for (let start = 0; start < count; start += BATCH) {
    const messages = [];
    for (let i = start; i < Math.min(start + BATCH, count); i++) {
      messages.push({ key: `k${i % 97}`, value: String(i) });
    }
    await producer.send({ topic, acks: -1, compression, messages });
  }
  await producer.disconnect();
  return { produced: count };
}

async function consume(kafka) {
  const consumer = kafka.consumer({ groupId: extra, maxWaitTimeInMs: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const messages = [];
  await new Promise((resolve, reject) => {
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        messages.push([partition, Number(message.offset), message.key.toString(), message.value.toString()]);
        if (messages.length >= count) resolve();
      },
    }).catch(reject);
  });
  await consumer.disconnect();
  return { messages };
}

(mode === 'produce' ? produce : consume)(makeKafka(port, `groupcoord-kafkajs-${mode}`, 5))
  .then((result) => {
    clearTimeout(watchdog);
    // A pipe takes a large write in pieces: exit only once all of it is out.
    process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
  })
  .catch((e) => {
    process.stdout.write(JSON.stringify({ error: { name: e.name, message: e.message } }) + '\n');
    process.exit(1);
  });
