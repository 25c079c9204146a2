import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { errorsOf, rows, thrown, until } from './support.ts';

/** A queued channel answers 200 {cid} once the event is stored, before its service runs. */

const BUSY = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 8000 }, handle: (ctx) => { const end = Date.now() + ctx.input.ms; while (Date.now() < end) {} return { ok: true }; } });
`;

/** Throws what it saw, so every attempt's view is kept in the event's error history. */
const RECORD = `import { service, toBase64 } from 'svc/sdk';
export default service({ handle: (ctx) => {
  throw new Error(JSON.stringify({ delivery: ctx.delivery ?? null, cid: ctx.cid, channel: ctx.channel, method: ctx.method, input: ctx.input, raw: ctx.rawBody, bytes: toBase64(ctx.rawBytes()), sig: ctx.env.HTTP_X_HOOK_SIGNATURE ?? null }));
} });
`;

const SYNC = `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ({ delivery: ctx.delivery ?? null }) });
`;

const CONFIG = `
plugins:
  use-queue: { config: { stop_wait_ms: 0 } }
channel_rest:
  - { name: slow, url_path: /slow, service: busy, security: none, use_queue: true }
  - { name: record, url_path: '/record/{kind}', service: record, security: none, use_queue: true,
      delivery: { max_attempts: 3, base_delay_ms: 10, jitter: false } }
  - { name: raw, url_path: /raw, service: record, security: none, data_format: none, use_queue: true,
      delivery: { max_attempts: 1 } }
  - { name: small, url_path: /small, service: busy, security: none, use_queue: true, delivery: { max_depth: 2, concurrency: 1 } }
  - { name: sync, url_path: /sync, service: sync, security: none }
`;

let k: TestKernel;
afterEach(async () => k?.close());

const start = () => startKernel({ config: CONFIG, services: { 'busy.ts': BUSY, 'record.ts': RECORD, 'sync.ts': SYNC } });

describe('accepting events on a queued channel', () => {
  it('answers 200 with the CID once stored, while the service is still to run', async () => {
    k = await start();
    const sent = Date.now();
    const res = await k.app.inject({ method: 'POST', url: '/slow', payload: { ms: 1500 } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const cid = res.headers['x-svc-cid'];
    expect(res.json()).toEqual({ cid });
    // The answer came before the service finished, by order rather than by ms: a processed event
    // is deleted, and this one is still there, stored, waiting or running.
    const [row] = await rows(k);
    expect(row).toMatchObject({ channel: 'slow', service: 'busy', cid });
    expect(['pending', 'running']).toContain(row!.state);
    await until(k, (r) => r.length === 0);
    expect(Date.now() - sent).toBeGreaterThanOrEqual(1500);
  });

  it('runs every attempt with ctx.delivery (attempt, first-received time, original CID), its own CID, the stored input, headers and raw body', async () => {
    k = await start();
    const body = '{"b": 1,   "a": "é",\n "n": [1,2]}';
    const res = await k.app.inject({ method: 'POST', url: '/record/order?x=1', payload: body, headers: { 'content-type': 'application/json', 'x-hook-signature': 'sig-123' } });
    expect(res.statusCode).toBe(200);
    const cid = res.json().cid as string;
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead!.attempts).toBe(3);
    const errors = errorsOf(dead!);
    expect(errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    const seen = errors.map((e) => thrown<Record<string, unknown>>(e));
    const firstReceivedAt = new Date(dead!.first_received_at).toISOString();
    expect(seen.map((s) => s.delivery)).toEqual([1, 2, 3].map((attempt) => ({ attempt, firstReceivedAt, cid })));
    // Each attempt has its own CID, recorded with its error; none is the original.
    expect(seen.map((s) => s.cid)).toEqual(errors.map((e) => e.cid));
    expect(new Set([cid, ...errors.map((e) => e.cid)]).size).toBe(4);
    expect(seen[0]).toMatchObject({ channel: 'record', method: 'POST', input: { b: 1, a: 'é', n: [1, 2], kind: 'order', x: '1' }, raw: body, sig: 'sig-123' });
    expect(Buffer.from(seen[0]!.bytes as string, 'base64').toString('utf8')).toBe(body);
  });

  it('keeps a body that is not UTF-8 byte for byte', async () => {
    k = await start();
    const bytes = Buffer.from([0xff, 0x00, 0xfe, 0x80, 0x41, 0x0a]);
    const res = await k.app.inject({ method: 'POST', url: '/raw', payload: bytes, headers: { 'content-type': 'application/octet-stream' } });
    expect(res.statusCode).toBe(200);
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    const seen = thrown<{ bytes: string; raw: string }>(errorsOf(dead!)[0]!);
    expect(Buffer.from(seen.bytes, 'base64').equals(bytes)).toBe(true);
    expect(seen.raw).toBe('');
  });

  it('a synchronous call has no ctx.delivery', async () => {
    k = await start();
    const res = await k.app.inject({ method: 'POST', url: '/sync', payload: {} });
    expect(res.json()).toEqual({ delivery: null });
  });

  it('refuses past max_depth with 503 and the CID, and drops nothing it accepted', async () => {
    k = await start();
    const post = () => k.app.inject({ method: 'POST', url: '/small', payload: { ms: 800 } });
    expect((await post()).statusCode).toBe(200);
    expect((await post()).statusCode).toBe(200);
    const refused = await post();
    expect(refused.statusCode).toBe(503);
    const cid = refused.headers['x-svc-cid'];
    expect(refused.json()).toEqual({ result: 'Error', cid, details: 'Queue is full (2 events)' });
    expect((await rows(k)).length).toBe(2);
    // Once the queue drains it accepts again.
    await until(k, (r) => r.length === 0);
    expect((await post()).statusCode).toBe(200);
  });
});
