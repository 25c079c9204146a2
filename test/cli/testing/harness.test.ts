import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outgoingPaths } from '../../../cli/testing/fakes.ts';
import { startTestEngine, type TestEngine } from '../../../cli/testing/harness.ts';
import { BadGateway, Conflict, Forbidden, NotFound, ServiceError } from '../../../sdk/errors.ts';
import { testService as sdkTestService, type Fakes } from '../../../sdk/testing/index.ts';
import { SqlError } from '../../../sdk/sql.ts';

/**
 * The engine behind svc/sdk/testing, in this process: services deploy into a real sandbox
 * process (isolated-vm), and their host calls reach the fakes.
 */
const dir = mkdtempSync(join(tmpdir(), 'svc-testing-'));
const services: Record<string, string> = {
  'crm.ts': `import { service, t, outgoing, publish, invokeAsync, secret, gatewayError, NotFound } from 'svc/sdk';
const crm = outgoing('crm');
export default service({
  input: { id: t.integer(), note: t.string({ optional: true }) },
  async GET(ctx) {
    const res = await crm.get(ctx.cid, { params: { id: ctx.input.id, expand: 'orders' }, headers: { 'X-Trace': 'yes' } }).catch(gatewayError);
    if (res.status === 404) throw new NotFound('no customer ' + ctx.input.id);
    return { name: res.data.name, status: res.status, type: res.headers['content-type'] };
  },
  async POST(ctx) {
    const { msgId } = await publish('/customers/noted', { id: ctx.input.id, note: ctx.input.note }, { priority: 7 });
    const cid = await invokeAsync('mailer', { to: ctx.input.id });
    const signature = await secret('partner').hmacSha256Hex('id=' + ctx.input.id);
    return { msgId, cid, signature, user: ctx.user?.username, header: ctx.headers['x-tenant'], attempt: ctx.delivery?.attempt };
  },
});
`,
  'counter.ts': `import { cache, service } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const c = cache('counts');
    try {
      return { seen: await c.incr(String(ctx.query.key)), name: await cache('lookups').getOrSet('customer:1', () => 'made'), gone: await c.delete('x') };
    } catch (e) {
      return { error: e.kind + ': ' + e.message };
    }
  },
});
`,
  'shipper.ts': `import { amqp, service } from 'svc/sdk';
export default service({
  async handle(ctx) {
    try {
      await amqp('orders').publish('orders', 'order.shipped', { id: ctx.input.id }, { messageId: 'o-' + ctx.input.id, headers: { tenant: 'acme' } });
      return { sent: true };
    } catch (e) {
      return { error: e.kind + ': ' + e.message };
    }
  },
});
`,
  'probe.ts': `import { service } from 'svc/sdk';
export default service({
  handle: () => ({
    process: typeof (globalThis as any).process,
    require: typeof (globalThis as any).require,
    fetch: typeof (globalThis as any).fetch,
    setTimeout: typeof (globalThis as any).setTimeout,
    sharedArrayBuffer: typeof (globalThis as any).SharedArrayBuffer,
  }),
});
`,
  'quote.ts': `import { service, t, invoke, invokeAll, NotFound } from 'svc/sdk';
export default service({
  input: { sku: t.string() },
  async handle(ctx) {
    try {
      const sku = ctx.input.sku;
      const [price, stock] = await invokeAll([{ service: 'pricing', input: { sku } }, { service: 'stock', input: { sku }, timeoutMs: 300 }]);
      return { price, stock, label: await invoke('labels', { sku }, { method: 'GET' }) };
    } catch (e) {
      if (e instanceof NotFound) return { unknown: ctx.input.sku, why: e.message };
      throw e;
    }
  },
});
`,
  'ledger.ts': `import { service, sql, SqlError } from 'svc/sdk';
export default service({
  async handle(ctx) {
    const db = sql('crm');
    try {
      const found = await db.query('SELECT name FROM customers WHERE id = $1', [Number(ctx.query.id)]);
      const [moved] = await db.transaction([{ text: 'UPDATE accounts SET total = total - $1 WHERE id = $2', params: [5, 1] }, { text: 'INSERT INTO audit (note) VALUES ($1)', params: ['moved'] }]);
      return { name: found.rows[0]?.name ?? null, count: found.rowCount, moved: moved.rowCount };
    } catch (e) {
      if (e instanceof SqlError) return { sqlError: e.code, statement: e.statement ?? null, message: e.message };
      throw e;
    }
  },
});
`,
  'slow.ts': `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 200 }, handle() { for (;;) {} } });
`,
  'broken.ts': `import { service } from 'svc/sdk';
type X = { a: number };
export default service({ handle() { return 1 +; } });
`,
};

let engine: TestEngine;
let close: () => Promise<void>;
beforeAll(async () => {
  for (const [file, code] of Object.entries(services)) writeFileSync(join(dir, file), code);
  ({ engine, close } = await startTestEngine(outgoingPaths([{ name: 'crm', address: 'https://crm.example.com/api', url_path: '/customers/{id}' }])));
  engine.testFile = join(dir, 'crm.test.ts');
  (globalThis as unknown as Record<symbol, unknown>)[Symbol.for('svc.testing')] = { engine, tests: [], prefix: [] };
});
afterAll(() => close?.());

const testService = (name: string, fakes?: Fakes) => sdkTestService(name, fakes);

describe('svc/sdk/testing', () => {
  it("fakes an outgoing connection by route and records the requests, with the config's path", async () => {
    const crm = testService('crm', { outgoing: { crm: { 'GET /api/customers/7': { body: { name: 'Ada' } }, GET: { status: 404 } } } });
    const res = await crm.get({ id: 7 });
    expect(res).toMatchObject({ status: 200, ok: true, body: { name: 'Ada', status: 200, type: 'application/json' } });
    expect(crm.requests).toEqual([{ connection: 'crm', method: 'GET', path: '/api/customers/7?expand=orders', params: { id: 7, expand: 'orders' }, payload: undefined, headers: { 'X-Trace': 'yes' } }]);
    const missing = await crm.get({ id: 8 });
    expect(missing.status).toBe(404);
    expect(missing.error).toBeInstanceOf(NotFound);
    expect(missing.error?.message).toBe('no customer 8');
  });

  it('answers with a function, and a failure is the OutgoingError production raises', async () => {
    const crm = testService('crm', { outgoing: { crm: (request) => ({ body: { name: `#${String(request.params.id)}` } }) } });
    expect((await crm.get({ id: 3 })).body.name).toBe('#3');
    const down = testService('crm', { outgoing: { crm: { fail: 'connection' } } });
    const res = await down.get({ id: 3 });
    expect(res.status).toBe(503);
    expect(res.error?.kind).toBe('ServiceUnavailable');
  });

  it('fails the call clearly when the service reaches a connection with no fake, or a route its fake lacks', async () => {
    await expect(testService('crm').get({ id: 1 })).rejects.toThrow("crm called GET /api/customers/1?expand=orders on 'crm', which has no fake: add outgoing: { 'crm': … } to testService('crm', …)");
    await expect(testService('crm', { outgoing: { crm: { 'POST /x': {} } } }).get({ id: 1 })).rejects.toThrow('which no route of its fake answers (routes: POST /x)');
  });

  it('records publications, background calls and signs with fake named secrets', async () => {
    const crm = testService('crm', { secrets: { partner: 'k3y' } });
    const res = await crm.post({ id: 5, note: 'vip' }, { user: { username: 'ann', definition: 'crm', type: 'basic_auth' }, headers: { 'X-Tenant': 'acme' }, delivery: { attempt: 2, firstReceivedAt: new Date(0).toISOString(), cid: 'c0' } });
    expect(res.status, res.error?.stack).toBe(200);
    const { createHmac } = await import('node:crypto');
    expect(res.body).toEqual({ msgId: 'fake-1', cid: 'queued-2', signature: createHmac('sha256', 'k3y').update('id=5').digest('hex'), user: 'ann', header: 'acme', attempt: 2 });
    expect(crm.published).toEqual([{ topic: '/customers/noted', data: { id: 5, note: 'vip' }, options: { priority: 7, hasGd: true, mimeType: 'application/json' } }]);
    expect(crm.queued).toEqual([{ service: 'mailer', input: { to: 5 }, cid: 'queued-2' }]);
    await expect(testService('crm').post({ id: 5 })).rejects.toThrow("used the named secret 'partner', which has no fake value");
  });

  it('fakes the services it invokes by value or function, and records each call of invoke and invokeAll', async () => {
    const quote = testService('quote', { invoke: { pricing: { returns: { eur: 3 } }, stock: (call) => ({ left: call.input.sku === 'pen' ? 5 : 0 }), labels: { returns: 'Pen' } } });
    const res = await quote.get({ sku: 'pen' });
    expect(res.status, res.error?.stack).toBe(200);
    expect(res.body).toEqual({ price: { eur: 3 }, stock: { left: 5 }, label: 'Pen' });
    expect(quote.invoked).toEqual([
      { service: 'pricing', input: { sku: 'pen' }, method: 'POST' },
      { service: 'stock', input: { sku: 'pen' }, method: 'POST', timeoutMs: 300 },
      { service: 'labels', input: { sku: 'pen' }, method: 'GET' },
    ]);
  });

  it('a fake throws an SDK error, which the service catches as its class or lets through with its status', async () => {
    const caught = await testService('quote', { invoke: { pricing: { throws: new NotFound('no price for ink') }, stock: { returns: {} } } }).get({ sku: 'ink' });
    expect(caught.body).toEqual({ unknown: 'ink', why: 'no price for ink' });
    const through = await testService('quote', { invoke: { pricing: () => { throw new Conflict('repricing'); }, stock: { returns: {} } } }).get({ sku: 'ink' });
    expect(through.status).toBe(409);
    expect(through.error).toBeInstanceOf(Conflict);
    expect(through.error?.message).toBe('repricing');
  });

  it('fails the call clearly when the service invokes a service with no fake', async () => {
    await expect(testService('quote', { invoke: { stock: { returns: {} } } }).get({ sku: 'pen' })).rejects.toThrow("quote invoked 'pricing', which has no fake: add invoke: { 'pricing': { returns: … } } to testService('quote', …)");
  });

  it('keeps named caches in memory for the service, starting from the fake entries, until reset', async () => {
    const counter = testService('counter', { caches: { lookups: { 'customer:1': 'Ann' }, counts: { s: 'text' } } });
    expect((await counter.get({}, { query: { key: 'a' } })).body).toEqual({ seen: 1, name: 'Ann', gone: false });
    expect((await counter.get({}, { query: { key: 'a' } })).body).toEqual({ seen: 2, name: 'Ann', gone: false });
    expect((await counter.get({}, { query: { key: 's' } })).body).toEqual({ error: 'BadRequest: incr needs a value that is an integer' });
    await counter.reset();
    expect((await counter.get({}, { query: { key: 'a' } })).body).toEqual({ seen: 1, name: 'Ann', gone: false });
    expect((await testService('counter').get({}, { query: { key: 'a' } })).body).toEqual({ seen: 1, name: 'made', gone: false });
  });

  it('fakes SQL connections: by exact text or by a function, SqlError thrown by a fake, a statement with no fake fails the test', async () => {
    const answers = {
      'SELECT name FROM customers WHERE id = $1': (q: { params: unknown[] }) => (q.params[0] === 1 ? [{ name: 'Ann' }] : []),
      'UPDATE accounts SET total = total - $1 WHERE id = $2': { rowCount: 1 },
      'INSERT INTO audit (note) VALUES ($1)': { rowCount: 1 },
    };
    const ledger = testService('ledger', { sql: { crm: answers } });
    expect((await ledger.get({}, { query: { id: '1' } })).body).toEqual({ name: 'Ann', count: 1, moved: 1 });
    expect(ledger.queries.map((q) => [q.text.split(' ')[0], q.params, q.statement])).toEqual([
      ['SELECT', [1], undefined],
      ['UPDATE', [5, 1], 0],
      ['INSERT', ['moved'], 1],
    ]);
    const failing = testService('ledger', {
      sql: {
        crm: (q) => {
          if (q.text.startsWith('INSERT')) throw new SqlError('crm', '23505', 'duplicate key');
          return [];
        },
      },
    });
    expect((await failing.get({}, { query: { id: '2' } })).body).toEqual({ sqlError: '23505', statement: 1, message: 'statement 1: duplicate key' });
    await expect(testService('ledger').get({}, { query: { id: '1' } })).rejects.toThrow("ledger ran SQL on 'crm', which has no fake: add sql: { 'crm': … } to testService('ledger', …)");
    await expect(testService('ledger', { sql: { crm: {} } }).get({}, { query: { id: '1' } })).rejects.toThrow(/ledger ran "SELECT name FROM customers WHERE id = \$1" on 'crm', which its fake does not answer/);
  });

  it('lets a publish fake refuse with an SDK error, which the service sees with its status', async () => {
    const crm = testService('crm', { secrets: { partner: 'k' }, publish: () => { throw new Forbidden('not this topic'); } });
    const res = await crm.post({ id: 1 });
    expect(res.status).toBe(403);
    expect(res.error).toBeInstanceOf(Forbidden);
    expect(crm.published).toEqual([]);
  });

  it('records AMQP publishes on a faked connection; a fake may refuse one; an unfaked connection fails the test', async () => {
    const shipper = testService('shipper', { amqp: { orders: true } });
    expect((await shipper.post({ id: 4 })).body).toEqual({ sent: true });
    expect(shipper.amqpPublished).toEqual([{ connection: 'orders', exchange: 'orders', routingKey: 'order.shipped', message: { id: 4 }, options: { persistent: true, messageId: 'o-4', headers: { tenant: 'acme' } } }]);
    const refusing = testService('shipper', { amqp: { orders: () => { throw new ServiceError('ServiceUnavailable', 503, 'broker down'); } } });
    expect((await refusing.post({ id: 5 })).body).toEqual({ error: 'ServiceUnavailable: broker down' });
    expect(refusing.amqpPublished).toEqual([]);
    await expect(testService('shipper').post({ id: 6 })).rejects.toThrow("shipper published on the AMQP connection 'orders', which has no fake: add amqp: { 'orders': true } to testService('shipper', …)");
  });

  it('checks input against the model as a channel does', async () => {
    const res = await testService('crm').get({ id: 'x' });
    expect(res.status).toBe(400);
    expect(res.error?.message).toBe("Invalid input: field 'id' must be an integer");
  });

  it('runs the service in an isolate, as in production: no process, require, fetch or timers', async () => {
    const res = await testService('probe').get();
    expect(res.body).toEqual({ process: 'undefined', require: 'undefined', fetch: 'undefined', setTimeout: 'undefined', sharedArrayBuffer: 'undefined' });
  });

  it("enforces the service's time limit", async () => {
    const res = await testService('slow').get();
    expect(res.status).toBe(503);
    expect(res.error).toBeInstanceOf(ServiceError);
    expect(res.error?.kind).toBe('SERVICE_TIMEOUT');
  });

  it('reports a service that does not compile with its file, line and column', async () => {
    await expect(testService('broken').get()).rejects.toThrow(/broken does not deploy:\n.*broken\.ts:3:46: Unexpected ";"/);
  });

  it('names a service that is not there', () => {
    expect(() => testService('nosuch')).toThrow("testService('nosuch'): no nosuch.ts, .js or .mjs in");
  });

  it("gives an upstream's status to the SDK error classes", async () => {
    const crm = testService('crm', { outgoing: { crm: { fail: 'tls' } } });
    expect((await crm.get({ id: 1 })).error).toBeInstanceOf(BadGateway);
  });
});
