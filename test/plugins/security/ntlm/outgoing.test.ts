import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OutgoingAuthorizer, OutgoingRequest, OutgoingResponse } from '../../../../plugins/capabilities.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { startNtlmServer, type Account, type NtlmServer, type NtlmServerOptions } from './ntlm-server.ts';

const PASSWORD = 'Pässw0rd-ntlm-7f3a';
const ACCOUNTS: Account[] = [
  { user: 'alice', domain: 'DOMAIN', password: PASSWORD },
  { user: 'bob@domain.test', domain: '', password: PASSWORD },
];
const CONFIG = `
security:
  - { name: alice, type: ntlm, username: 'DOMAIN\\alice', password: "\${NTLM_PASSWORD}", workstation: WS1 }
  - { name: bob, type: ntlm, username: bob@domain.test, password: "\${NTLM_PASSWORD}" }
  - { name: mallory, type: ntlm, username: alice, domain: DOMAIN, password: not-the-password }
`;

// One kernel for the file (it only provides the factory); an NTLM server per test.
let kernel: TestKernel;
let server: NtlmServer | undefined;
const authorizers: OutgoingAuthorizer[] = [];
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  kernel = await startKernel({ config: CONFIG, env: { NTLM_PASSWORD: PASSWORD }, logs });
});
afterAll(() => kernel.close());

afterEach(async () => {
  await Promise.all(authorizers.splice(0).map((a) => a.close?.()));
  await server?.close();
  server = undefined;
});

async function setup(options: Partial<NtlmServerOptions> = {}): Promise<NtlmServer> {
  server = await startNtlmServer({ accounts: ACCOUNTS, ...options });
  return server;
}

function authorizer(name: string): OutgoingAuthorizer {
  const factory = kernel.kernel.api.lookup('security.outgoing.ntlm')!;
  const definition = kernel.kernel.configStore.current().security.find((s) => s.name === name)!;
  const a = factory(definition);
  authorizers.push(a);
  return a;
}

function call(a: OutgoingAuthorizer, path: string, init: { method?: string; json?: unknown; timeoutMs?: number; signal?: AbortSignal; base?: string } = {}): Promise<OutgoingResponse> {
  const request: OutgoingRequest = {
    method: init.method ?? (init.json === undefined ? 'GET' : 'POST'),
    url: new URL(path, init.base ?? server!.url),
    headers: init.json === undefined ? { accept: 'application/json' } : { 'content-type': 'application/json' },
    body: init.json === undefined ? undefined : Buffer.from(JSON.stringify(init.json)),
  };
  return a.send!(request, { cid: 'c1', scopes: undefined, signal: init.signal ?? new AbortController().signal, timeoutMs: init.timeoutMs ?? 5_000 });
}

const json = (res: OutgoingResponse) => JSON.parse(res.body.toString('utf8')) as Record<string, unknown>;

describe('ntlm outgoing authorizer', () => {
  it('authenticates a GET and a POST with a JSON body; the body reaches the server once, with the AUTHENTICATE', async () => {
    const s = await setup();
    const a = authorizer('alice');
    expect(a.send).toBeTypeOf('function');

    const get = await call(a, '/orders?x=1');
    expect(get.status).toBe(200);
    expect(json(get)).toMatchObject({ ok: true, user: 'alice' });
    expect(get.headers['content-type']).toBe('application/json');

    const post = await call(a, '/orders', { json: { id: 7, name: 'ünïcode' } });
    expect(post.status).toBe(200);
    expect(s.served).toEqual([
      { socket: 1, method: 'GET', url: '/orders?x=1', user: 'alice', domain: 'DOMAIN', body: '', contentType: undefined },
      { socket: 1, method: 'POST', url: '/orders', user: 'alice', domain: 'DOMAIN', body: '{"id":7,"name":"ünïcode"}', contentType: 'application/json' },
    ]);
    expect(s.mics).toBe(1);
  });

  it('a POST as the first call: NEGOTIATE with an empty body, the JSON with the AUTHENTICATE', async () => {
    const s = await setup();
    const res = await call(authorizer('bob'), '/events', { json: { type: 'created' } });
    expect(res.status).toBe(200);
    expect(json(res)).toMatchObject({ user: 'bob@domain.test' });
    expect(s.served).toMatchObject([{ method: 'POST', body: '{"type":"created"}', domain: '' }]);
    expect([s.handshakes, s.verified, s.sockets]).toEqual([1, 1, 1]);
  });

  it('20 sequential calls: one handshake on one socket', async () => {
    const s = await setup();
    const a = authorizer('alice');
    for (let i = 0; i < 20; i++) expect((await call(a, `/n/${i}`)).status).toBe(200);
    expect([s.handshakes, s.verified, s.sockets, s.served.length]).toEqual([1, 1, 1, 20]);
  });

  it('concurrent calls are serialized on the one connection', async () => {
    const s = await setup({ delayMs: 5 });
    const a = authorizer('alice');
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => call(a, `/p/${i}`, { json: { i } })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect([s.handshakes, s.sockets]).toEqual([1, 1]);
    expect(s.served.map((x) => x.body).sort()).toEqual(Array.from({ length: 10 }, (_, i) => JSON.stringify({ i })).sort());
  });

  it('two definitions, and two origins of one definition, get connections of their own', async () => {
    const s = await setup();
    const other = await startNtlmServer({ accounts: ACCOUNTS });
    try {
      const alice = authorizer('alice');
      const bob = authorizer('bob');
      for (let i = 0; i < 3; i++) {
        await call(alice, '/a');
        await call(bob, '/b');
        await call(alice, '/a', { base: other.url });
      }
      expect(new Set(s.served.filter((x) => x.user === 'alice').map((x) => x.socket)).size).toBe(1);
      expect(new Set(s.served.filter((x) => x.user === 'bob@domain.test').map((x) => x.socket)).size).toBe(1);
      expect([s.handshakes, s.sockets]).toEqual([2, 2]);
      expect([other.handshakes, other.sockets, other.served.length]).toEqual([1, 1, 3]);
    } finally {
      await other.close();
    }
  });

  it('a wrong password: the 401 is the answer, after one attempt', async () => {
    const s = await setup();
    const res = await call(authorizer('mallory'), '/orders', { json: { id: 1 } });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('NTLM');
    expect([s.handshakes, s.refused, s.verified, s.served.length]).toEqual([1, 1, 0, 0]);
  });

  it('works without MsvAvTimestamp (LMv2 computed, no MIC)', async () => {
    const s = await setup({ timestamp: false });
    expect((await call(authorizer('alice'), '/x')).status).toBe(200);
    expect([s.verified, s.mics]).toEqual([1, 0]);
  });

  it('the server closes the connection (Connection: close): the next call handshakes on a new one', async () => {
    const s = await setup({ closeAfter: 2 });
    const a = authorizer('alice');
    for (let i = 0; i < 4; i++) expect((await call(a, '/c')).status).toBe(200);
    expect([s.handshakes, s.sockets]).toEqual([2, 2]);
    expect(s.served.map((x) => x.socket)).toEqual([1, 1, 2, 2]);
  });

  it('the server drops an idle connection: the next call handshakes on a new one', async () => {
    const s = await setup();
    const a = authorizer('alice');
    await call(a, '/c');
    await s.dropSockets();
    // Let the client see the FIN: a request sent into it races the close (see the next test).
    await new Promise((r) => setTimeout(r, 50));
    expect((await call(a, '/c', { json: { after: 'drop' } })).status).toBe(200);
    expect(s.handshakes).toBe(2);
    expect(s.served.at(-1)).toMatchObject({ body: '{"after":"drop"}' });
  });

  it('a reused socket closed under a request: a GET is sent again after a new handshake, a POST fails with the socket error', async () => {
    const s = await setup();
    const a = authorizer('alice');
    await call(a, '/c');
    s.dropNextRequest();
    const get = await call(a, '/again');
    expect(get.status).toBe(200);
    expect([s.dropped, s.handshakes, s.sockets]).toEqual([1, 2, 2]);
    s.dropNextRequest();
    await expect(call(a, '/once', { json: { pay: 1 } })).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(s.dropped).toBe(2);
    expect(s.served.filter((x) => x.url === '/once')).toEqual([]);
  });

  it('the server forgets the authentication (401 on an authenticated socket): one new handshake on a new connection', async () => {
    const s = await setup();
    const a = authorizer('alice');
    await call(a, '/c');
    s.forget();
    const res = await call(a, '/c', { json: { again: true } });
    expect(res.status).toBe(200);
    expect([s.handshakes, s.sockets]).toEqual([2, 2]);
    expect(s.served.map((x) => x.socket)).toEqual([1, 2]);
  });

  it('a timeout fails the call with ETIMEDOUT and discards the connection', async () => {
    const s = await setup({ delayMs: 300 });
    const a = authorizer('alice');
    await expect(call(a, '/slow', { timeoutMs: 100 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const res = await call(a, '/slow', { timeoutMs: 5_000 });
    expect(res.status).toBe(200);
    expect([s.handshakes, s.sockets]).toEqual([2, 2]);
  });

  it('the caller aborting fails the call with ABORT_ERR and discards the connection; a call waiting behind it goes on', async () => {
    const s = await setup({ delayMs: 200 });
    const a = authorizer('alice');
    const controller = new AbortController();
    const aborted = call(a, '/slow', { signal: controller.signal });
    const waiting = call(a, '/next');
    setTimeout(() => controller.abort(), 50);
    await expect(aborted).rejects.toMatchObject({ code: 'ABORT_ERR' });
    expect((await waiting).status).toBe(200);
    expect(s.sockets).toBe(2);
  });

  it('network errors propagate with their code', async () => {
    await setup();
    const closed = await startNtlmServer({ accounts: ACCOUNTS });
    const url = closed.url;
    await closed.close();
    await expect(call(authorizer('alice'), '/x', { base: url })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('after close() the definition sends nothing more', async () => {
    await setup();
    const a = authorizer('alice');
    await call(a, '/x');
    await a.close!();
    await expect(call(a, '/x')).rejects.toMatchObject({ code: 'ERR_NTLM_CLOSED' });
  });

  it('the password and the NTLM messages never reach the logs (of every test in this file)', async () => {
    await setup();
    await call(authorizer('alice'), '/x', { json: { a: 1 } });
    await call(authorizer('mallory'), '/x');
    const text = JSON.stringify(logs);
    expect(logs.length).toBeGreaterThan(0);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain('not-the-password');
    expect(text).not.toContain('TlRMTVNT'); // base64 of "NTLMSS"
  });
});
