'use strict';
// Drives the Node.js RocketMQ client ali-ons for compat-tests/test_client_node.py; prints JSON lines.
//
//   node client.js send --namesrv HOST:PORT --topic T
//       stdin: one JSON message a line {"bodyBase64", "tags", "keys": [..], "properties": {..}, "shardingKey"}
//       stdout: one line a message {"index", "sendStatus", "msgId", "brokerName", "queueId", "queueOffset"}
//   node client.js consume --namesrv HOST:PORT --group G --spec JSON
//       spec: {"subscriptions": [{"topic", "expression": "*" | "TagA || TagB" | {"type": "SQL92", "expression"}}],
//              "rejectOnceKeys": [..], "expect": N, "quietMs": N, "timeoutMs": N}
//       stdout: one line a delivery (a message whose key is in rejectOnceKeys makes its handler throw the first
//       time, so ali-ons sends it back and it returns from %RETRY%G), then {"done": true, "count", "timedOut"}
// ali-ons logs warnings and errors with console.warn / console.error, which go to stderr.

const readline = require('readline');
const { Producer, Consumer, Message } = require('ali-ons');

// ali-ons asks for an HTTP client to look the name server up on Aliyun; with nameSrv it is never called.
const NO_HTTP = { request() { throw new Error('no HTTP name server lookup here: pass --namesrv'); } };

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`bad argument: ${argv[i]}`);
    opts[argv[i].slice(2)] = argv[i + 1];
  }
  return opts;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function readMessages() {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  const messages = [];
  for await (const line of lines) {
    if (line.trim()) messages.push(JSON.parse(line));
  }
  return messages;
}

async function send(opts) {
  const producer = new Producer({
    httpclient: NO_HTTP, nameSrv: opts.namesrv, producerGroup: opts.group || 'NODE_COMPAT_PRODUCER',
  });
  await producer.ready();
  const specs = await readMessages();
  for (let index = 0; index < specs.length; index++) {
    const spec = specs[index];
    const msg = new Message(opts.topic, spec.tags || null, Buffer.from(spec.bodyBase64, 'base64'));
    if (spec.keys) msg.keys = spec.keys;
    for (const [key, value] of Object.entries(spec.properties || {})) msg.properties[key] = value;
    if (spec.shardingKey) msg.shardingKey = spec.shardingKey;
    const result = await producer.send(msg);
    emit({
      index, sendStatus: result.sendStatus, msgId: result.msgId, brokerName: result.messageQueue.brokerName,
      queueId: result.messageQueue.queueId, queueOffset: result.queueOffset,
    });
  }
  await producer.close();
}

function subscription(expression) {
  if (expression && typeof expression === 'object') {
    return { expressionType: expression.type, subString: expression.expression };
  }
  return expression;
}

async function consume(opts) {
  const spec = JSON.parse(opts.spec);
  const rejectOnce = new Set(spec.rejectOnceKeys || []);
  const consumer = new Consumer({
    httpclient: NO_HTTP, nameSrv: opts.namesrv, consumerGroup: opts.group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', persistConsumerOffsetInterval: 1000,
    // The retry topic's route appears after the first send-back: look for it (and rebalance) every second.
    pollNameServerInteval: 1000, rebalanceInterval: 1000,
  });
  let count = 0;
  let wakeUp = () => {};
  let errors = 0;
  consumer.on('error', err => {
    errors++;
    console.error(`[client.js] consumer error: ${err && err.stack}`);
  });
  await consumer.ready();
  for (const { topic, expression } of spec.subscriptions) {
    consumer.subscribe(topic, subscription(expression), async msg => {
      count++;
      const reject = msg.keys && rejectOnce.delete(msg.keys);
      emit({
        topic: msg.topic, msgId: msg.msgId, bodyBase64: msg.body.toString('base64'), tags: msg.tags || null,
        keys: msg.keys || null, properties: msg.properties, queueId: msg.queueId, queueOffset: msg.queueOffset,
        reconsumeTimes: msg.reconsumeTimes, storeHost: msg.storeHost, rejected: Boolean(reject),
      });
      wakeUp();
      if (reject) throw new Error(`rejected once on purpose: ${msg.keys}`);
    });
  }
  const deadline = Date.now() + (spec.timeoutMs || 60000);
  while (count < spec.expect && Date.now() < deadline) {
    await new Promise(resolve => { wakeUp = resolve; setTimeout(resolve, 200); });
  }
  const timedOut = count < spec.expect;
  // Whatever arrives during the quiet period is reported too: a filter must not let more through.
  await new Promise(resolve => setTimeout(resolve, timedOut ? 0 : spec.quietMs || 0));
  await consumer.close();
  emit({ done: true, count, timedOut, errors });
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  const opts = parseArgs(rest);
  if (command === 'send') await send(opts);
  else if (command === 'consume') await consume(opts);
  else throw new Error(`unknown command ${command}: send or consume`);
}

main().then(() => process.exit(0), err => {
  emit({ error: String(err && err.stack || err) });
  process.exit(1);
});
