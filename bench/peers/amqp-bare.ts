/**
 * What a team would write without svc, in its own process, for the AMQP bench (bench/suites/amqp.ts):
 *   publish PORT QUEUE           a Fastify route GET /pub publishing one persistent message with a confirm channel
 *   consume QUEUE PREFETCH       a consumer that acks each message; prints `STARTED <epoch ms>` once consuming
 */
import amqp from 'amqplib';
import Fastify from 'fastify';

const BROKER = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const [mode, a, b] = process.argv.slice(2);

if (mode === 'publish') {
  const conn = await amqp.connect(BROKER);
  const ch = await conn.createConfirmChannel();
  const body = Buffer.from(JSON.stringify({ id: 42, item: 'pen', qty: 2 }));
  const app = Fastify();
  app.get('/pub', async () => {
    await new Promise<void>((resolve, reject) => ch.sendToQueue(b!, body, { persistent: true, contentType: 'application/json' }, (err) => (err ? reject(err) : resolve())));
    return { ok: true };
  });
  await app.listen({ port: Number(a), host: '127.0.0.1' });
} else if (mode === 'consume') {
  const conn = await amqp.connect(BROKER);
  const ch = await conn.createChannel();
  await ch.prefetch(Number(b));
  await ch.consume(a!, (msg) => {
    if (msg) {
      JSON.parse(msg.content.toString());
      ch.ack(msg);
    }
  });
  console.log(`STARTED ${Date.now()}`);
} else {
  console.error('usage: amqp-bare.ts publish PORT QUEUE | consume QUEUE PREFETCH');
  process.exit(2);
}
