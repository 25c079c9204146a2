import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { until } from './support.ts';

/**
 * Concurrency and order. Queued services call an upstream over a real socket that holds each
 * call a while and counts how many it holds at once, per channel and in all. With its gate
 * closed it holds every call until the test opens it, so what must happen meanwhile provably does.
 */

let upstream: Server;
let port = 0;
let holdMs = 150;
let gateClosed = false;
const atGate: Array<() => void> = [];
/** Lets the calls held at the gate go on (each still held holdMs), and those after them. */
function openGate(): void {
  gateClosed = false;
  for (const go of atGate.splice(0)) go();
}
const inflight = new Map<string, number>();
const peak = new Map<string, number>();
const bump = (key: string, by: number) => {
  const n = (inflight.get(key) ?? 0) + by;
  inflight.set(key, n);
  peak.set(key, Math.max(peak.get(key) ?? 0, n));
};

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const ch = new URL(req.url!, 'http://x').searchParams.get('ch')!;
    bump(ch, 1);
    bump('all', 1);
    const finish = () =>
      setTimeout(() => {
        bump(ch, -1);
        bump('all', -1);
        res.end('{}');
      }, holdMs);
    if (gateClosed) atGate.push(finish);
    else finish();
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  port = (upstream.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => upstream.close(() => r())));

const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ handle: async (ctx) => { await outgoing('up').get(ctx.cid, { params: { ch: ctx.channel ?? 'background', n: ctx.input.n } }); return {}; } });
`;
const SYNC = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;

const config = (options: string, channels: string) => `
plugins:
  use-queue: { config: ${options} }
outgoing_rest:
  - { name: up, address: "http://127.0.0.1:${port}" }
channel_rest:
${channels}
  - { name: sync, url_path: /sync, service: sync, security: none }
`;

let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];
afterEach(async () => k?.close());

async function start(options: string, channels: string): Promise<void> {
  inflight.clear();
  peak.clear();
  gateClosed = false;
  atGate.length = 0;
  logs.length = 0;
  k = await startKernel({ config: config(options, channels), services: { 'caller.ts': CALLER, 'sync.ts': SYNC }, logs });
}
const post = (path: string, n: number) => k.app.inject({ method: 'POST', url: path, payload: { n } });
const started = () => logs.filter((l) => l.msg === 'queue: attempt started');

describe('ordering and concurrency', () => {
  it('starts a channel\'s events in arrival order, at most `concurrency` at once', async () => {
    holdMs = 150;
    await start('{ max_running: 4 }', '  - { name: a, url_path: /a, service: caller, security: none, use_queue: true, delivery: { concurrency: 2 } }');
    for (let n = 1; n <= 6; n++) expect((await post('/a', n)).statusCode).toBe(200);
    await until(k, (r) => r.length === 0);
    expect(started().map((l) => l.event)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(peak.get('a')).toBe(2);
  });

  it('all queues together stay within max_running, taking turns', async () => {
    holdMs = 150;
    await start(
      '{ max_running: 3 }',
      [
        '  - { name: a, url_path: /a, service: caller, security: none, use_queue: true, delivery: { concurrency: 3 } }',
        '  - { name: b, url_path: /b, service: caller, security: none, use_queue: true, delivery: { concurrency: 3 } }',
      ].join('\n'),
    );
    // Six of a arrive first; b's events still start before a's backlog is done. The first three
    // are held until all nine are in, however long the posts take.
    gateClosed = true;
    for (let n = 1; n <= 6; n++) expect((await post('/a', n)).statusCode).toBe(200);
    for (let n = 1; n <= 3; n++) expect((await post('/b', n)).statusCode).toBe(200);
    await until(k, () => atGate.length === 3);
    expect(started()).toHaveLength(3);
    openGate();
    await until(k, (r) => r.length === 0);
    expect(peak.get('all')).toBe(3);
    const order = started().map((l) => l.channel);
    expect(order.indexOf('b')).toBeLessThan(order.lastIndexOf('a'));
    expect(order.lastIndexOf('b')).toBeLessThan(order.lastIndexOf('a'));
  });

  it('by default one queued call runs at a time with one sandbox process, and a synchronous channel answers meanwhile', async () => {
    holdMs = 150;
    await start('{}', '  - { name: a, url_path: /a, service: caller, security: none, use_queue: true, delivery: { concurrency: 3 } }');
    gateClosed = true;
    for (let n = 1; n <= 3; n++) expect((await post('/a', n)).statusCode).toBe(200);
    await until(k, () => atGate.length === 1);
    expect((await k.app.inject({ method: 'GET', url: '/sync' })).statusCode).toBe(200);
    // Answered while the queued call is still held upstream: by order, not by ms.
    expect(atGate).toHaveLength(1);
    expect(inflight.get('all')).toBe(1);
    openGate();
    await until(k, (r) => r.length === 0);
    expect(peak.get('all')).toBe(1);
  });
});
