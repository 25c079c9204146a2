import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { json, Upstream } from './upstream.ts';
import { refusedPort } from '../../../helpers/refused-port.ts';

/**
 * Services call a real upstream on loopback through outgoing connections (spec D): the path and
 * query from params, JSON both ways, headers, credentials added on the host side, the retry rules,
 * errors a service maps in one line, and cancellation when the calling request's limit fires.
 */
const upstream = new Upstream();
let k: TestKernel;
let deadPort = 0;
const logs: Array<Record<string, unknown>> = [];
const held: Array<import('node:http').ServerResponse> = [];

const CALLER = `import { service, outgoing, gatewayError } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { conn, method, options, map } = ctx.payload;
    const call = outgoing(conn)[method](ctx.cid, options);
    const res = map ? await call.catch(gatewayError) : await call;
    return { status: res.status, ok: res.ok, data: res.data, text: res.text, headers: res.headers };
  },
});
`;
// Calls an upstream that never answers, with a time limit far below the connection's timeout_ms:
// the call must end first, as a timeout the service maps, and be cancelled upstream.
const IMPATIENT = `import { service, outgoing, gatewayError } from 'svc/sdk';
export default service({ limits: { timeoutMs: 400 }, async POST(ctx) { return (await outgoing('hang').get(ctx.cid).catch(gatewayError)).status; } });
`;
// Answers without waiting for its call: the call must be cancelled with the request.
const HASTY = `import { service, outgoing } from 'svc/sdk';
export default service({ async POST(ctx) { outgoing('hang').get(ctx.cid).catch(() => undefined); await outgoing('text').get(ctx.cid); return 'done'; } });
`;
const FAILING = `import { service, outgoing, OutgoingError } from 'svc/sdk';
export default service({
  async POST(ctx) {
    try { await outgoing(ctx.payload.conn).get(ctx.cid); return 'no error'; }
    catch (e) { return { outgoing: e instanceof OutgoingError, kind: e.kind, attempts: e.attempts, message: e.message }; }
  },
});
`;

function config(): string {
  const at = `http://127.0.0.1:${upstream.port}`;
  const fast = '{ max_attempts: 3, base_backoff_ms: 5, max_backoff_ms: 20, budget_ms: 5000 }';
  return `
security:
  - { name: crm-basic, type: basic_auth, username: svc-user, password: "crm-Passw0rd!" }
  - { name: crm-key, type: apikey, key: "k3y-0f-the-crm-xyz" }
channel_rest:
  - { name: caller, url_path: /call, service: caller, security: none }
  - { name: impatient, url_path: /impatient, service: impatient, security: none }
  - { name: hasty, url_path: /hasty, service: hasty, security: none }
  - { name: failing, url_path: /failing, service: failing, security: none }
outgoing_rest:
  - { name: CRM, address: "${at}/api", url_path: "/customers/{id}", headers: { X-Conn: crm } }
  - { name: basic, address: "${at}", url_path: /echo, security: crm-basic }
  - { name: key, address: "${at}", url_path: /echo, security: crm-key }
  - { name: text, address: "${at}", url_path: /text }
  - { name: flaky, address: "${at}", url_path: /flaky, retry: ${fast} }
  - { name: dated, address: "${at}", url_path: /dated, retry: ${fast} }
  - { name: tight, address: "${at}", url_path: /later, retry: { max_attempts: 5, budget_ms: 1000 } }
  - { name: broken, address: "${at}", url_path: /broken, retry: ${fast} }
  - { name: slow, address: "${at}", url_path: /slow, timeout_ms: 150, retry: ${fast} }
  - { name: slowish, address: "${at}", url_path: /hold, timeout_ms: 20000 }
  - { name: dead, address: "http://127.0.0.1:${deadPort}", retry: ${fast} }
  - { name: hang, address: "${at}", url_path: /hang, timeout_ms: 20000 }
  - { name: hold, address: "${at}", url_path: /hold, max_connections: 256 }
  - { name: private, address: "${at}", url_path: /echo, allowed_services: [someone-else] }
`;
}

async function call(conn: string, method: string, options: Record<string, unknown> = {}, map = false) {
  const res = await k.app.inject({ method: 'POST', url: '/call', payload: { conn, method, options, map } });
  return { statusCode: res.statusCode, body: res.json() as Record<string, any> };
}

beforeAll(async () => {
  deadPort = await refusedPort();

  await upstream
    .route('/api/customers/', (req, res, body) => json(res, 200, { url: req.url, method: req.method, conn: req.headers['x-conn'], custom: req.headers['x-custom'], type: req.headers['content-type'], body: body ? JSON.parse(body) : null }))
    .route('/echo', (_req, res) => json(res, 200, { ok: true }))
    .route('/text', (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words'))
    .route('/flaky', (_req, res, _b, hit) => (hit < 3 ? json(res, 429, { slow: 'down' }, { 'retry-after': '0' }) : json(res, 200, { hit })))
    .route('/dated', (_req, res, _b, hit) => (hit === 1 ? json(res, 429, {}, { 'retry-after': new Date(Date.now() + 2000).toUTCString() }) : json(res, 200, { hit })))
    .route('/later', (_req, res) => json(res, 429, { retry: 'much later' }, { 'retry-after': '10' }))
    .route('/broken', (_req, res) => json(res, 500, { error: 'upstream bug' }))
    .route('/slow', (_req, res, _b, hit) => void setTimeout(() => json(res, 200, { hit }), 400))
    .route('/hang', () => undefined)
    .route('/hold', (_req, res) => void held.push(res))
    .start();
  k = await startKernel({ config: config(), services: { 'caller.ts': CALLER, 'impatient.ts': IMPATIENT, 'hasty.ts': HASTY, 'failing.ts': FAILING }, logs });
});
afterAll(async () => {
  await k?.close();
  await upstream.close();
});
beforeEach(() => upstream.reset());

describe('outgoing calls from a service', () => {
  it('fill {placeholders} from params, send the rest as the query string, JSON both ways, headers merged', async () => {
    const { statusCode, body } = await call('CRM', 'post', { params: { id: 'a/b 1', expand: 'orders', tag: ['x', 'y'] }, payload: { name: 'Ada' }, headers: { 'X-Custom': 'yes' } });
    expect(statusCode).toBe(200);
    expect(body.status).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.data).toEqual({ url: '/api/customers/a%2Fb%201?expand=orders&tag=x&tag=y', method: 'POST', conn: 'crm', custom: 'yes', type: 'application/json', body: { name: 'Ada' } });
    expect(body.headers['content-type']).toBe('application/json');
  });

  it('give non-JSON bodies as text', async () => {
    const { body } = await call('text', 'get');
    expect(body).toMatchObject({ status: 200, data: 'plain words', text: 'plain words' });
  });

  it('add Basic Auth and API key credentials on the host side, where the service cannot read them', async () => {
    await call('basic', 'get');
    await call('key', 'get');
    const [basic, key] = upstream.hits('/echo');
    expect(basic!.headers.authorization).toBe(`Basic ${Buffer.from('svc-user:crm-Passw0rd!').toString('base64')}`);
    expect(key!.headers['x-api-key']).toBe('k3y-0f-the-crm-xyz');
    expect(JSON.stringify(logs)).not.toMatch(/crm-Passw0rd!|k3y-0f-the-crm-xyz|c3ZjLXVzZXI6/);
  });

  it('retry 429 as Retry-After says (seconds or a date), within the budget', async () => {
    const flaky = await call('flaky', 'get');
    expect(flaky.body).toMatchObject({ status: 200, data: { hit: 3 } });
    const started = Date.now();
    const dated = await call('dated', 'post', { payload: { once: true } });
    expect(dated.body).toMatchObject({ status: 200, data: { hit: 2 } });
    // An HTTP date has whole seconds: the wait is between 1 and 2 s.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('stop when Retry-After is past the budget, answering the 429 at once', async () => {
    const started = Date.now();
    const { body } = await call('tight', 'get');
    expect(body).toMatchObject({ status: 429, ok: false, data: { retry: 'much later' } });
    expect(upstream.hits('/later')).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('never retry other HTTP errors', async () => {
    const { body } = await call('broken', 'get');
    expect(body).toMatchObject({ status: 500, ok: false, data: { error: 'upstream bug' } });
    expect(upstream.hits('/broken')).toHaveLength(1);
  });

  it('retry timeouts of idempotent calls, and of others only with an idempotency key', async () => {
    const get = await k.app.inject({ method: 'POST', url: '/failing', payload: { conn: 'slow' } });
    expect(get.json()).toEqual({ outgoing: true, kind: 'timeout', attempts: 3, message: 'slow: no response within 150 ms (after 3 attempts)' });
    expect(upstream.hits('/slow')).toHaveLength(3);
    upstream.reset();
    await call('slow', 'post', { payload: {} });
    expect(upstream.hits('/slow')).toHaveLength(1);
    upstream.reset();
    await call('slow', 'post', { payload: {}, headers: { 'Idempotency-Key': 'order-17' } });
    expect(upstream.hits('/slow')).toHaveLength(3);
  });

  it('raise connection failures after the retries; unmapped the caller gets 500, mapped 503 or 504', async () => {
    const failing = await k.app.inject({ method: 'POST', url: '/failing', payload: { conn: 'dead' } });
    expect(failing.json()).toMatchObject({ outgoing: true, kind: 'connection', attempts: 3 });
    const unmapped = await call('dead', 'get');
    expect(unmapped.statusCode).toBe(500);
    expect(unmapped.body).toMatchObject({ result: 'Error' });
    const mapped = await call('dead', 'get', {}, true);
    expect(mapped.statusCode).toBe(503);
    expect(mapped.body.details).toBe('dead is unreachable');
    const timeout = await call('slow', 'get', {}, true);
    expect(timeout.statusCode).toBe(504);
    expect(timeout.body.details).toBe('slow did not answer in time');
  });

  it("end before the calling service's time limit, as a timeout the service can map, and are cancelled upstream", async () => {
    // timeout_ms is 20 s, the service's limit 400 ms: waiting it out ended the call with SERVICE_TIMEOUT.
    const started = performance.now();
    const res = await k.app.inject({ method: 'POST', url: '/impatient' });
    expect(res.statusCode, res.body).toBe(504);
    expect(res.json().details).toBe('hang did not answer in time');
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    await expect.poll(() => upstream.aborted, { timeout: 2000 }).toContain('/hang');
  });

  it('are cancelled when the calling request ends first', async () => {
    const res = await k.app.inject({ method: 'POST', url: '/hasty' });
    expect(res.statusCode, res.body).toBe(200);
    await expect.poll(() => upstream.aborted, { timeout: 2000 }).toContain('/hang');
  });

  it('do not hold up other calls of the same sandbox process while they wait', async () => {
    // A call of the same service waits on the upstream until the test releases it.
    let settled = false;
    const waiting = call('hold', 'get').finally(() => (settled = true));
    await expect.poll(() => held.length, { timeout: 5000 }).toBe(1);
    for (let i = 0; i < 5; i++) expect((await call('text', 'get')).body.text).toBe('plain words');
    // All five answered while it still waited: by order, not by ms.
    expect(settled).toBe(false);
    for (const res of held.splice(0)) json(res, 200, { released: true });
    expect((await waiting).body).toMatchObject({ status: 200, data: { released: true } });
  });

  it('many at once: calls waiting on the upstream leave their isolate slot to others', async () => {
    const calls = Array.from({ length: 200 }, () => call('hold', 'get'));
    // More than the 128 calls an isolate runs at once: the waiting ones are parked on the kernel.
    await expect.poll(() => held.length, { timeout: 5000 }).toBe(200);
    for (const res of held.splice(0)) json(res, 200, { released: true });
    for (const done of await Promise.all(calls)) expect(done.body).toMatchObject({ status: 200, data: { released: true } });
  });

  it('follow config changes at once; a call in flight finishes on the connection it started on', async () => {
    let settled = false;
    const inFlight = call('slowish', 'post', { payload: {} }).finally(() => (settled = true));
    // Held by the upstream until the test releases it: in flight for the whole change.
    await expect.poll(() => held.length, { timeout: 5000 }).toBe(1);
    try {
      // Both connections change: text points elsewhere, slowish gets a new pool while its call is in flight.
      expect(await k.writeConfig(config().replace('url_path: /text }', 'url_path: /echo }').replace('url_path: /hold, timeout_ms: 20000 }', 'url_path: /hold, timeout_ms: 25000 }'))).toBe(true);
      expect((await call('text', 'get')).body.data).toEqual({ ok: true });
      expect(settled).toBe(false);
      for (const res of held.splice(0)) json(res, 200, { released: true });
      expect((await inFlight).body).toMatchObject({ status: 200, data: { released: true } });
    } finally {
      // The tests after this one read the original config.
      await k.writeConfig(config());
    }
  });

  it('refuse connections the service may not use, and unknown names, as the service’s own error (500)', async () => {
    const priv = await call('private', 'get');
    expect(priv.statusCode).toBe(500);
    const ghost = await call('ghost', 'get');
    expect(ghost.statusCode).toBe(500);
    expect(upstream.hits('/echo')).toHaveLength(0);
    expect(JSON.stringify(logs)).toContain("may not use the outgoing connection 'private'");
  });
});
