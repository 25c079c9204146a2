import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

const SERVICES = {
  'ok.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`,
  'absent.ts': `import { service, NotFound } from 'svc/sdk';\nexport default service({ handle: () => { throw new NotFound('no such order'); } });\n`,
  'slow.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => { const t = Date.now(); while (Date.now() - t < 60); return { ok: true }; } });\n`,
  'boom.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => { throw new Error('internal detail'); } });\n`,
};

const CONFIG = `
security:
  - { name: sec.alice, type: basic_auth, username: alice, password: alice-password-1 }
channel_rest:
  - { name: ok, url_path: /ok, service: ok, security: none }
  - { name: absent, url_path: /absent, service: absent, security: none }
  - { name: boom, url_path: /boom, service: boom, security: none }
  - { name: slow, url_path: /slow, service: slow, security: none }
  - { name: closed, url_path: /closed, service: ok, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, disallowed: true }] }] }
pubsub_topic:
  - { name: /orders/new }
pubsub_endpoint:
  - { name: ep.alice, security: sec.alice, pub: ['/orders/**'], sub: ['/orders/**'] }
plugins:
  traffic: { config: { recent: 10 } }
`;

const ALICE = `Basic ${Buffer.from('alice:alice-password-1').toString('base64')}`;
const START = Date.UTC(2026, 0, 1, 12);

interface Recent {
  last_seq: number;
  requests: Array<{ seq: number; cid: string; channel: string; method: string; path: string; status: number; ms: number; at: number }>;
}
interface Stats {
  seconds: number;
  step: number;
  channels: Array<{
    channel: string;
    totals: { requests: number; errors_4xx: number; errors_5xx: number; rate: number; mean_ms: number | null };
    series: { start: number; step: number; rate: number[]; errors_4xx: number[]; errors_5xx: number[]; mean_ms: Array<number | null>; p95_ms?: Array<number | null> };
  }>;
}

let k: TestKernel;
const clock = new ManualClock(START);

beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES, clock, listen: true });
});
afterAll(() => k?.close());

/** A request over a real socket; its status, 0 when the connection was cut without a response, and the CID header. */
async function call(path: string, init: RequestInit = {}): Promise<{ status: number; cid: string | null }> {
  try {
    const res = await fetch(k.url + path, init);
    await res.arrayBuffer();
    return { status: res.status, cid: res.headers.get('x-svc-cid') };
  } catch {
    return { status: 0, cid: null };
  }
}

const recent = (args: object = {}) => k.kernel.runControl('traffic.recent', args) as Promise<Recent>;
const stats = (args: object = {}) => k.kernel.runControl('traffic.stats', args) as Promise<Stats>;

describe('traffic.recent', () => {
  it('records each answered request once, newest first, with the status the client got and no query string', async () => {
    const before = (await recent()).last_seq;
    const sent = [
      await call('/ok?token=very-secret'),
      await call('/absent'),
      await call('/boom'),
      await call('/svc/pubsub/topic/orders/new', { method: 'POST', headers: { authorization: ALICE, 'content-type': 'application/json' }, body: JSON.stringify({ data: 'hello' }) }),
      await call('/svc/pubsub/topic/orders/new', { method: 'POST', body: '{}' }),
      await call('/closed'),
    ];
    expect(sent.map((s) => s.status)).toEqual([200, 404, 500, 200, 401, 0]);

    const { last_seq, requests } = await recent({ after_seq: before });
    expect(last_seq).toBe(before + 6);
    expect(requests.map((r) => [r.channel, r.method, r.path, r.status])).toEqual([
      ['closed', 'GET', '/closed', 0],
      ['pubsub-a topic', 'POST', '/svc/pubsub/topic/orders/new', 401],
      ['pubsub-a topic', 'POST', '/svc/pubsub/topic/orders/new', 200],
      ['boom', 'GET', '/boom', 500],
      ['absent', 'GET', '/absent', 404],
      ['ok', 'GET', '/ok', 200],
    ]);
    expect(requests.map((r) => r.seq)).toEqual([6, 5, 4, 3, 2, 1].map((n) => before + n));
    // The CID is the one the client saw in X-Svc-CID.
    expect(requests.slice(1).map((r) => r.cid)).toEqual(sent.slice(0, 5).reverse().map((s) => s.cid));
    for (const r of requests) {
      expect(r.at).toBe(START);
      expect(r.ms).toBeGreaterThanOrEqual(0);
    }
    expect(JSON.stringify(requests)).not.toContain('very-secret');
    expect(JSON.stringify(requests)).not.toContain('alice');
  });

  it("times each request from its arrival at the route to the reply, the service's time included", async () => {
    expect((await call('/slow')).status).toBe(200);
    const [slow] = (await recent({ channel: 'slow', limit: 1 })).requests;
    expect(slow!.ms).toBeGreaterThanOrEqual(55);
    expect(slow!.ms).toBeLessThan(5000);
  });

  it('filters by channel, limits, and polls with after_seq', async () => {
    await call('/ok');
    await call('/absent');
    await call('/ok');
    const all = await recent({ limit: 3 });
    expect(all.requests.map((r) => r.channel)).toEqual(['ok', 'absent', 'ok']);
    const ok = await recent({ channel: 'ok', limit: 2 });
    expect(ok.requests.map((r) => r.channel)).toEqual(['ok', 'ok']);
    expect(ok.requests[0]!.seq).toBe(all.last_seq);

    expect((await recent({ after_seq: all.last_seq })).requests).toEqual([]);
    await call('/boom');
    const polled = await recent({ after_seq: all.last_seq });
    expect(polled.requests.map((r) => [r.seq, r.channel])).toEqual([[all.last_seq + 1, 'boom']]);
    expect(polled.last_seq).toBe(all.last_seq + 1);
  });

  it('keeps only the configured number of requests (recent: 10)', async () => {
    for (let i = 0; i < 12; i++) await call('/ok');
    const { last_seq, requests } = await recent({ limit: 500 });
    expect(requests).toHaveLength(10);
    expect(requests.map((r) => r.seq)).toEqual(Array.from({ length: 10 }, (_, i) => last_seq - i));
    // Asking from before the ring's oldest entry returns what is still held.
    expect((await recent({ after_seq: 1, limit: 500 })).requests).toHaveLength(10);
  });

  it('refuses bad arguments with a message naming the field', async () => {
    await expect(recent({ limit: 501 })).rejects.toThrow(/invalid arguments for 'traffic.recent': limit: .*500/);
    await expect(recent({ after_seq: -1 })).rejects.toThrow(/after_seq/);
    await expect(recent({ since: 3 })).rejects.toThrow(/since/);
  });
});

describe('traffic.stats', () => {
  it('counts requests, 4xx and 5xx per channel and second, and forgets what left the window', async () => {
    clock.set(Date.UTC(2026, 0, 2, 0, 0, 0));
    const t0 = Math.floor(clock.now() / 1000);
    await call('/ok');
    await call('/ok');
    await call('/absent');
    clock.advance(1000);
    await call('/boom');
    await call('/ok');
    clock.advance(8000);

    const s = await stats({ seconds: 10 });
    expect(s.seconds).toBe(10);
    const byName = new Map(s.channels.map((c) => [c.channel, c]));
    // Channels without requests in the window are left out.
    expect([...byName.keys()].sort()).toEqual(['absent', 'boom', 'ok']);
    const ok = byName.get('ok')!;
    expect(ok.totals).toMatchObject({ requests: 3, errors_4xx: 0, errors_5xx: 0, rate: 0.3 });
    expect(ok.totals.mean_ms).toBeGreaterThanOrEqual(0);
    expect(ok.series.start).toBe(t0 * 1000);
    expect(ok.series.rate).toEqual([2, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ok.series.mean_ms[0]).toBeGreaterThanOrEqual(0);
    expect(ok.series.mean_ms[9]).toBeNull();
    expect(byName.get('absent')!.series.errors_4xx).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(byName.get('boom')!.series.errors_5xx).toEqual([0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect(byName.get('boom')!.totals).toMatchObject({ requests: 1, errors_4xx: 0, errors_5xx: 1 });

    // 10-second points: all five requests in one bucket.
    const coarse = await stats({ seconds: 20, step: 10, channel: 'ok' });
    expect(coarse.channels).toHaveLength(1);
    expect(coarse.channels[0]!.series.rate).toEqual([0, 0.3]);
    expect(coarse.channels[0]!.series.start).toBe((t0 - 10) * 1000);

    clock.advance(900_000);
    const later = await stats({ seconds: 900 });
    expect(later.channels).toEqual([]);
    // A named channel is answered even when quiet (or unknown), with zeros.
    const quiet = await stats({ seconds: 900, step: 60, channel: 'ok' });
    expect(quiet.channels[0]!.totals).toEqual({ requests: 0, errors_4xx: 0, errors_5xx: 0, rate: 0, mean_ms: null, p95_ms: null });
    expect(quiet.channels[0]!.series.p95_ms).toEqual(Array(15).fill(null));
    expect(quiet.channels[0]!.series.rate).toHaveLength(15);
  });

  it('refuses a window beyond the 15 minutes kept', async () => {
    await expect(stats({ seconds: 901 })).rejects.toThrow(/invalid arguments for 'traffic.stats': seconds/);
    await expect(stats({ step: 0 })).rejects.toThrow(/step/);
  });
});
