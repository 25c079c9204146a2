import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import amqp, { type Channel } from 'amqplib';
import { freePort, median, printGrid, rounds, spawnLogged, startSvcCli, type Running } from '../lib.ts';
import { compareChannels } from '../peers/channel.ts';

/**
 * AMQP connector (RabbitMQ on this machine, BENCH_AMQP_URL else guest@127.0.0.1).
 * (1) Consume: a queue pre-filled with MESSAGES messages by this process, drained by svc
 *     (channel_amqp → trivial service → ack) or by a bare amqplib consumer that acks, each in its
 *     own process, same prefetch; messages/s from the consumer's start to the queue empty.
 * (2) Publish with confirms: an HTTP channel whose service publishes one persistent message, against a
 *     bare Fastify route publishing on a confirm channel (own process), same load; req/s and CPU per message.
 */
const BROKER = process.env.BENCH_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const MESSAGES = Number(process.env.BENCH_AMQP_MESSAGES ?? 20_000);
// The same window on both sides; BENCH_AMQP_PREFETCH compares others.
const PREFETCH = Number(process.env.BENCH_AMQP_PREFETCH ?? 50);
const CONSUME_Q = `svc-bench-consume-${process.pid}`;
const PUBLISH_Q = `svc-bench-publish-${process.pid}`;
const BARE = fileURLToPath(new URL('../peers/amqp-bare.ts', import.meta.url));
const BODY = Buffer.from(JSON.stringify({ id: 42, item: 'pen', qty: 2 }));

const TRIVIAL = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ ok: ctx.payload !== undefined }) });\n`;
const PUBLISHER = `import { service, amqp } from 'svc/sdk';\nconst body = { id: 42, item: 'pen', qty: 2 };\nexport default service({ async handle() { await amqp('bench').publish('', '${PUBLISH_Q}', body); return { ok: true }; } });\n`;

async function fill(ch: Channel): Promise<void> {
  await ch.purgeQueue(CONSUME_Q);
  const confirm = await amqp.connect(BROKER);
  const cc = await confirm.createConfirmChannel();
  for (let i = 0; i < MESSAGES; i++) cc.sendToQueue(CONSUME_Q, BODY, { persistent: false, contentType: 'application/json', messageId: `b-${i}` });
  await cc.waitForConfirms();
  await confirm.close();
}

async function untilEmpty(ch: Channel): Promise<number> {
  for (;;) {
    if ((await ch.checkQueue(CONSUME_Q)).messageCount === 0) return Date.now();
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function bareConsumer(ch: Channel): Promise<number> {
  await fill(ch);
  const child = spawn(process.execPath, ['--import', 'tsx', BARE, 'consume', CONSUME_Q, String(PREFETCH)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const started = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /STARTED (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`bare consumer exited with ${code}`)));
    });
    return MESSAGES / ((await untilEmpty(ch)) - started) * 1000;
  } finally {
    child.kill('SIGTERM');
  }
}

async function svcConsumer(ch: Channel): Promise<number> {
  await fill(ch);
  const config = {
    server: { log_level: 'info' },
    channel_rest: [{ name: 'hello', url_path: '/hello', service: 'trivial', security: 'none' }],
    amqp_connection: [{ name: 'bench', url: BROKER }],
    channel_amqp: [{ name: 'bench-in', connection: 'bench', queue: CONSUME_Q, service: 'trivial', prefetch: PREFETCH }],
  };
  const ended = untilEmpty(ch);
  const svc = await startSvcCli(config, { 'trivial.ts': TRIVIAL }, '/hello');
  try {
    const end = await ended;
    const line = readFileSync(join(svc.dir, 'server.log'), 'utf8').split('\n').find((l) => l.includes('AMQP channel consuming'));
    if (!line) throw new Error('svc did not log that it consumes');
    const started = (JSON.parse(line) as { time: number }).time;
    return MESSAGES / (end - started) * 1000;
  } finally {
    await svc.stop();
  }
}

async function barePublisher(): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const p = await spawnLogged(['--import', 'tsx', BARE, 'publish', String(port), PUBLISH_Q], { cwd: process.cwd(), log: '/dev/null', probe: `${url}/pub` });
  return { url, ...p };
}

export async function run(): Promise<void> {
  const conn = await amqp.connect(BROKER);
  const ch = await conn.createChannel();
  await ch.assertQueue(CONSUME_Q, { durable: false });
  await ch.assertQueue(PUBLISH_Q, { durable: true, arguments: { 'x-max-length': 1000 } });
  try {
    const [bare, svc] = await rounds([() => bareConsumer(ch), () => svcConsumer(ch)]);
    const b = median(bare!);
    const s = median(svc!);
    printGrid(
      `AMQP consume: ${MESSAGES} messages pre-filled, prefetch ${PREFETCH}, consumer in its own process (medians of ${bare!.length} interleaved rounds)`,
      ['case', 'messages/s', 'vs bare', 'note'],
      [
        ['bare amqplib consumer that acks', String(Math.round(b)), '1.00', `rounds ${bare!.map(Math.round).join(', ')}`],
        ['svc channel_amqp → trivial service → ack', String(Math.round(s)), (s / b).toFixed(2), `concurrency ${PREFETCH}; rounds ${svc!.map(Math.round).join(', ')}`],
      ],
    );
    const svcConfig = {
      channel_rest: [{ name: 'pub', url_path: '/pub', service: 'publisher', security: 'none' }],
      amqp_connection: [{ name: 'bench', url: BROKER, ready_check: true }],
    };
    await compareChannels('AMQP publish with confirms: one persistent message per request into a queue (x-max-length 1000)', [
      { name: 'bare Fastify route, amqplib confirm channel', note: 'bench/peers/amqp-bare.ts publish', path: '/pub', start: barePublisher, alone: true },
      { name: 'svc HTTP channel → service → amqp(name).publish', note: 'CLI, default config', path: '/pub', start: () => startSvcCli(svcConfig, { 'publisher.ts': PUBLISHER }, '/pub') },
    ]);
  } finally {
    await ch.deleteQueue(CONSUME_Q).catch(() => {});
    await ch.deleteQueue(PUBLISH_Q).catch(() => {});
    await conn.close();
  }
}
