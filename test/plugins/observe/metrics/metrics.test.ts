import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenServer } from '../../security/bearer-token/token-server.ts';
import { json, Upstream } from '../../outgoing/rest/upstream.ts';
import { parseExposition, startObserved, sampleValue, type ObservedKernel, type Sample } from '../support.ts';

/**
 * Prometheus scrapes /metrics on the admin listener; requests of every kind go through real
 * sockets, real sandboxes and real upstreams; the next scrape shows each series moved by exactly
 * what happened.
 */
const CRASH = `'1'.repeat(0xfffffff).split('')`;
const SERVICES = {
  'ok.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`,
  'absent.ts': `import { service, NotFound } from 'svc/sdk';\nexport default service({ handle: () => { throw new NotFound('no such order'); } });\n`,
  'spin.ts': `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 200 }, handle(ctx) { if (ctx.query.spin) for (;;) {} return 'done'; } });\n`,
  'crash.ts': `import { service } from 'svc/sdk';\nexport default service({ handle(ctx) { if (ctx.query.crash) ${CRASH}; return 'fine'; } });\n`,
  'refuse.ts': `import { service, BadRequest } from 'svc/sdk';\nexport default service({ handle() { throw new BadRequest('not this event'); } });\n`,
  'caller.ts': `import { service, outgoing } from 'svc/sdk';\nexport default service({ async handle(ctx) { const r = await outgoing('api').get(ctx.cid, { params: { id: 1 } }); return { status: r.status }; } });\n`,
  'publisher.ts': `import { service, publish } from 'svc/sdk';\nexport default service({ async handle() { return publish('/orders/new', { order: 1 }); } });\n`,
};

const ALICE = `Basic ${Buffer.from('alice:alice-password-1').toString('base64')}`;

let k: ObservedKernel;
let tokens: TokenServer;
const api = new Upstream();

beforeAll(async () => {
  tokens = await TokenServer.start();
  await api.route('/things/', (_req, res) => json(res, 200, { id: 1 })).start();
  k = await startObserved({
    config: `
security:
  - { name: sec.alice, type: basic_auth, username: alice, password: alice-password-1 }
  - { name: api-oauth, type: bearer_token, username: svc-client, client_secret: client-secret-0123, auth_server_url: "${tokens.url}", scopes: "things.read" }
channel_rest:
  - { name: ok, url_path: /ok, service: ok, security: none }
  - { name: absent, url_path: /absent, service: absent, security: none }
  - { name: limited, url_path: /limited, service: ok, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 1, limit_unit: day }] }] }
  - { name: closed, url_path: /closed, service: ok, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, disallowed: true }] }] }
  - { name: spin, url_path: /spin, service: spin, security: none }
  - { name: crash, url_path: /crash, service: crash, security: none }
  - { name: queued, url_path: /queued, service: refuse, security: none, use_queue: true }
  - { name: caller, url_path: /caller, service: caller, security: none }
  - { name: publisher, url_path: /publisher, service: publisher, security: none }
outgoing_rest:
  - { name: api, address: "http://127.0.0.1:${api.port}", url_path: "/things/{id}", security: api-oauth }
pubsub_topic:
  - { name: /orders/new }
pubsub_endpoint:
  - { name: ep.alice, security: sec.alice, sub: ['/orders/**'] }
  - { name: ep.publisher, services: [publisher], pub: ['/orders/new'] }
`,
    services: SERVICES,
  });
}, 60_000);

afterAll(async () => {
  await k?.close();
  await api.close();
  await tokens?.close();
});

async function scrape(headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; cid: string | null; samples: Sample[]; text: string }> {
  const res = await fetch(`${k.admin}/metrics`, { headers });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), cid: res.headers.get('x-svc-cid'), samples: res.status === 200 ? parseExposition(text) : [], text };
}

const get = async (path: string, init?: RequestInit) => (await fetch(k.url + path, init)).status;

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /metrics on the admin listener', () => {
  it('answers Prometheus text with the CID header, and the process metrics', async () => {
    const r = await scrape();
    expect(r.status).toBe(200);
    expect(r.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(r.cid).toMatch(/^[0-9a-f]{22}$/);
    expect(r.text).toContain('# TYPE svc_http_requests_total counter');
    expect(r.text).toContain('# TYPE svc_http_request_duration_seconds histogram');
    expect(sampleValue(r.samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(r.samples.some((s) => s.name === 'nodejs_eventloop_lag_seconds')).toBe(true);
    expect(sampleValue(r.samples, 'svc_sandbox_processes')).toBe(1);
  });

  it('is not on the channel listener', async () => {
    expect(await get('/metrics')).toBe(404);
  });

  it('moves every series by what happened between two scrapes', async () => {
    const before = (await scrape()).samples;
    const delta = (name: string, labels: Record<string, string> = {}) => sampleValue(after, name, labels) - sampleValue(before, name, labels);

    // Requests: ok, a 4xx from the service, a rate-limit denial, a connection the firewall drops.
    for (let i = 0; i < 3; i++) expect(await get('/ok')).toBe(200);
    expect(await get('/absent')).toBe(404);
    expect(await get('/limited')).toBe(200);
    expect(await get('/limited')).toBe(429);
    await expect(fetch(k.url + '/closed')).rejects.toThrow();
    // A call over its time limit: its isolate is disposed and rebuilt for the next call.
    expect(await get('/spin?spin=1')).toBe(503);
    expect(await get('/spin')).toBe(200);
    // Three crashes of the sandbox process within a minute quarantine the service.
    for (let i = 0; i < 3; i++) expect(await get('/crash?crash=1')).toBe(503);
    expect(await get('/crash')).toBe(503);
    // A queued event that the service refuses: dead-lettered at once (a permanent error).
    expect(await get('/queued', { method: 'POST' })).toBe(200);
    // An outgoing call on a token-protected connection: one token request, one call.
    expect(await get('/caller')).toBe(200);
    // A subscription, then a publish from a service: one message waits in it.
    expect((await fetch(`${k.url}/svc/pubsub/subscribe/topic/orders/new`, { method: 'POST', headers: { authorization: ALICE } })).status).toBe(200);
    expect(await get('/publisher')).toBe(200);

    let after: Sample[] = [];
    await until('the queued event to be dead-lettered', async () => {
      after = (await scrape()).samples;
      return sampleValue(after, 'svc_queue_dead_letters', { queue: 'queued' }) === 1;
    });

    expect(delta('svc_http_requests_total', { channel: 'ok', status: '200' })).toBe(3);
    expect(delta('svc_http_requests_total', { channel: 'absent', status: '404' })).toBe(1);
    expect(delta('svc_http_requests_total', { channel: 'limited', status: '200' })).toBe(1);
    expect(delta('svc_http_requests_total', { channel: 'limited', status: '429' })).toBe(1);
    expect(delta('svc_http_requests_total', { channel: 'closed', status: '0' })).toBe(1);
    expect(delta('svc_http_requests_total', { channel: 'crash', status: '503' })).toBe(4);
    expect(delta('svc_http_requests_total', { channel: 'queued', status: '200' })).toBe(1);

    expect(delta('svc_http_request_duration_seconds_count', { channel: 'ok' })).toBe(3);
    expect(delta('svc_http_request_duration_seconds_bucket', { channel: 'ok', le: '+Inf' })).toBe(3);
    expect(delta('svc_http_request_duration_seconds_sum', { channel: 'ok' })).toBeGreaterThan(0);
    // The spinning call cannot be answered before its 200 ms limit: it lies past the 0.1 s bucket.
    expect(delta('svc_http_request_duration_seconds_bucket', { channel: 'spin', le: '+Inf' })).toBe(2);
    expect(delta('svc_http_request_duration_seconds_bucket', { channel: 'spin', le: '0.1' })).toBeLessThanOrEqual(1);
    expect(delta('svc_http_request_duration_seconds_sum', { channel: 'spin' })).toBeGreaterThanOrEqual(0.2);

    expect(delta('svc_rate_limit_denials_total', { channel: 'limited' })).toBe(1);
    expect(delta('svc_rate_limit_drops_total', { channel: 'closed' })).toBe(1);

    expect(delta('svc_sandbox_calls_total', { service: 'ok', tenant: '', outcome: 'ok' })).toBe(4);
    expect(delta('svc_sandbox_calls_total', { service: 'absent', tenant: '', outcome: 'error' })).toBe(1);
    expect(delta('svc_sandbox_calls_total', { service: 'spin', tenant: '', outcome: 'timeout' })).toBe(1);
    expect(delta('svc_sandbox_calls_total', { service: 'spin', tenant: '', outcome: 'ok' })).toBe(1);
    expect(delta('svc_sandbox_calls_total', { service: 'crash', tenant: '', outcome: 'crashed' })).toBe(3);
    expect(delta('svc_sandbox_calls_total', { service: 'crash', tenant: '', outcome: 'quarantined' })).toBe(1);
    expect(delta('svc_sandbox_calls_total', { service: 'refuse', tenant: '', outcome: 'error' })).toBe(1);
    expect(delta('svc_sandbox_isolate_rebuilds_total', { service: 'spin', tenant: '' })).toBe(1);
    // A time limit: rebuilt at once; only memory limits met again and again make rebuilds wait.
    expect(delta('svc_sandbox_isolate_rebuild_wait_seconds_total', { service: 'spin', tenant: '' })).toBe(0);
    expect(delta('svc_sandbox_process_restarts_total')).toBe(3);
    expect(sampleValue(after, 'svc_sandbox_quarantined_services')).toBe(1);
    expect(sampleValue(after, 'svc_sandbox_processes')).toBe(1);

    expect(sampleValue(after, 'svc_queue_depth', { queue: 'queued' })).toBe(0);
    expect(delta('svc_queue_dead_letters', { queue: 'queued' })).toBe(1);

    expect(delta('svc_outgoing_requests_total', { connection: 'api', status: '200' })).toBe(1);
    expect(delta('svc_oauth_token_requests_total', { security: 'api-oauth', outcome: 'ok' })).toBe(1);
    expect(tokens.calls).toHaveLength(1);

    expect(sampleValue(after, 'svc_pubsub_subscription_depth', { endpoint: 'ep.alice', topic: '/orders/new' })).toBe(1);
  }, 60_000);

  it('counts the scrapes themselves nowhere: the admin listener is not a channel', async () => {
    const a = (await scrape()).samples;
    const b = (await scrape()).samples;
    expect(b.filter((s) => s.name === 'svc_http_requests_total')).toEqual(a.filter((s) => s.name === 'svc_http_requests_total'));
  });
});
