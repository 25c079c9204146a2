import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqp, { type ConfirmChannel, type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { Bare, BROKER, suffix } from './support.ts';

/**
 * THE RESTART TEST: a stream of persistent messages with unique ids into a durable queue that a
 * channel consumes; RabbitMQ restarts in the middle (rabbitmqctl stop_app, start_app: every
 * connection dropped, the durable queue recovered from disk). The publisher (a bare client with
 * confirms) republishes what was not confirmed once it reconnects. Every id the service processed
 * is recorded by an HTTP server: none may be missing; duplicates are counted (at least once).
 */
const run = promisify(execFile);
const N = Number(process.env.SVC_AMQP_RESTART_N ?? 2000);
const QUEUE = `svc-amqp-restart-${suffix}`;
const RECORD = `import { service, outgoing } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const res = await outgoing('rec').post(ctx.cid, { payload: { id: ctx.headers['message-id'], redelivered: ctx.headers.redelivered } });
    if (!res.ok) throw new Error('recorder answered ' + res.status);
    return { ok: true };
  },
});
`;

async function brokerUp(timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      const c = await amqp.connect(BROKER);
      await c.close();
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** Publishes ids [0, N) with confirms, in windows; a window not confirmed (the broker went away) is sent again after a reconnect. */
async function publishAll(onConfirmed: (count: number) => void): Promise<{ republished: number }> {
  let conn: ChannelModel | undefined;
  let ch: ConfirmChannel | undefined;
  let republished = 0;
  const WINDOW = 50;
  for (let start = 0; start < N; ) {
    try {
      if (!ch) {
        conn = await amqp.connect(BROKER);
        conn.on('error', () => {});
        ch = await conn.createConfirmChannel();
        ch.on('error', () => {});
      }
      for (let i = start; i < Math.min(N, start + WINDOW); i++) ch.sendToQueue(QUEUE, Buffer.from(JSON.stringify({ n: i })), { persistent: true, messageId: `m-${i}`, contentType: 'application/json' });
      await ch.waitForConfirms();
      start += WINDOW;
      onConfirmed(Math.min(N, start));
      await new Promise((r) => setTimeout(r, 5));
    } catch {
      republished += Math.min(WINDOW, N - start);
      ch = undefined;
      await conn?.close().catch(() => {});
      conn = undefined;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await conn?.close().catch(() => {});
  return { republished };
}

let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];
const upstream = new Upstream();

beforeAll(async () => {
  await upstream.route('/seen', (_req, res) => json(res, 200, { ok: true })).start();
  k = await startKernel({
    config: `
outgoing_rest:
  - { name: rec, address: "http://127.0.0.1:${upstream.port}", url_path: /seen }
amqp_connection:
  - { name: main, url: "${BROKER}", reconnect: { min_ms: 200, max_ms: 1000 } }
channel_amqp:
  - { name: restart-in, connection: main, queue: ${QUEUE}, declare: { durable: true }, service: record, prefetch: 20, delivery: { max_attempts: 5, base_delay_ms: 100, max_delay_ms: 1000 } }
`,
    services: { 'record.ts': RECORD },
    logs,
  });
});

afterAll(async () => {
  await k?.close();
  await upstream.close();
  const cleanup = await new Bare().open();
  await cleanup.ch.deleteQueue(QUEUE).catch(() => {});
  await cleanup.close();
});

describe('a RabbitMQ restart while messages flow', () => {
  it('loses no message; duplicates are only redeliveries, deduplicable by message id', async () => {
    let restartMs = 0;
    let restart: Promise<void> | undefined;
    try {
      const published = publishAll((count) => {
        if (restart === undefined && count >= N / 4) {
          restart = (async () => {
            const started = Date.now();
            await run('rabbitmqctl', ['stop_app']);
            await run('rabbitmqctl', ['start_app']);
            await brokerUp(60_000);
            restartMs = Date.now() - started;
          })();
        }
      });
      const { republished } = await published;
      await restart;
      await expect.poll(() => new Set(upstream.hits('/seen').map((s) => JSON.parse(s.body).id)).size, { timeout: 60_000, interval: 200 }).toBe(N);
      const ids = upstream.hits('/seen').map((s) => JSON.parse(s.body).id as string);
      const distinct = new Set(ids);
      const lost = Array.from({ length: N }, (_, i) => `m-${i}`).filter((id) => !distinct.has(id));
      const duplicates = ids.length - distinct.size;
      const channel = k.kernel.api.connections().find((c) => c.name === 'restart-in')!;
      console.log(`[amqp restart] ${N} messages, broker restart ${restartMs} ms, republished by the publisher ${republished}, processed ${ids.length}, lost ${lost.length}, duplicates ${duplicates}, consumer reconnects ${channel.meter.reconnects}`);
      expect(lost).toEqual([]);
      expect(restartMs).toBeGreaterThan(0);
      expect(channel.meter.reconnects).toBeGreaterThanOrEqual(1);
      // Once all is processed the queue is empty: everything processed was acked.
      await expect.poll(async () => {
        const b = await new Bare().open();
        try {
          return await b.count(QUEUE);
        } finally {
          await b.close();
        }
      }, { timeout: 10_000 }).toBe(0);
    } catch (err) {
      console.log(logs.filter((l) => (l.level as number) >= 40).slice(0, 10));
      throw err;
    } finally {
      await restart?.catch(() => {});
      await run('rabbitmqctl', ['start_app']).catch(() => {});
      await brokerUp(60_000);
    }
  }, 120_000);
});
