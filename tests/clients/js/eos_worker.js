#!/usr/bin/env node
// The exactly-once worker of tests/clients/eos_worker.py, written with kafkajs (v0-1 transactional APIs).
//
//   node eos_worker.js PORT GROUP TRANSACTIONAL_ID INPUT OUTPUT
//
// One transaction per fetched batch: the records "<partition>:<offset>" of INPUT go to OUTPUT and the
// next offset goes in with sendOffsets, then commit. An error aborts and is rethrown: kafkajs then
// restarts the consumer from the group's committed offsets. Runs until killed.
'use strict';

const { makeKafka } = require('./common');

const [port, group, transactionalId, source, sink] = process.argv.slice(2);

async function main() {
  const kafka = makeKafka(port, `eos-${transactionalId}`, 20);
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1,
                                    transactionTimeout: 30000 });
  await producer.connect();
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 500,
                                    readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic: source, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      if (batch.messages.length === 0) return;
      const transaction = await producer.transaction();
      try {
        await transaction.send({ topic: sink, messages: batch.messages.map((m) => ({
          key: m.key, value: `${batch.partition}:${m.offset}` })) });
        await new Promise((resolve) => setTimeout(resolve, 50));
        const next = (BigInt(batch.messages[batch.messages.length - 1].offset) + 1n).toString();
        await transaction.sendOffsets({ consumerGroupId: group,
                                        topics: [{ topic: source, partitions: [{ partition: batch.partition, offset: next }] }] });
        await transaction.commit();
        // Unresolved messages are fetched again: move the consumer past what the transaction consumed.
        resolveOffset(batch.messages[batch.messages.length - 1].offset);
      } catch (error) {
        process.stderr.write(`aborting: ${error.name}: ${error.message}\n`);
        await transaction.abort().catch(() => {});
        throw error;
      }
    },
  });
}

main().catch((error) => {
  process.stderr.write(`fatal: ${error.name}: ${error.message}\n`);
  process.exit(3);
});
