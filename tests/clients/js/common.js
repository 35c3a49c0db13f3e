// What every kafkajs test script shares: a hard time box and a client whose logs go to stderr
// (as JSON lines) so that stdout stays the script's parseable result.
'use strict';

const { Kafka, logLevel } = require('kafkajs');

// A broken server or test must not leave the script behind: exit 3 with an error line after limitMs.
function startWatchdog(defaultLimitMs, what) {
  const limitMs = Number(process.env.KAFKAJS_HARD_LIMIT_MS || defaultLimitMs);
  return setTimeout(() => {
    process.stdout.write(JSON.stringify({ error: { name: 'Timeout', message: `${what} after ${limitMs} ms` } }) + '\n');
    process.exit(3);
  }, limitMs);
}

const stderrLogCreator = () => ({ namespace, level, label, log }) => {
  process.stderr.write(JSON.stringify({ level: label, namespace, ...log }) + '\n');
};

function makeKafka(port, clientId, retries) {
  return new Kafka({
    clientId,
    brokers: [`127.0.0.1:${port}`],
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { retries, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator: stderrLogCreator,
  });
}

module.exports = { startWatchdog, makeKafka };
