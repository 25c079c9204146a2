import { connect, type Socket } from 'node:net';
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * server.refusal_pause_ms (kernel/platform/refusal-pause.ts): after a 429 on a keep-alive
 * connection, that connection's next request is read only after the pause (3/4 of it to all of
 * it: test/kernel/sandbox/supervision.test.ts has a quarantined service's 503); other connections,
 * and connections of a trusted proxy, go on at once. Over real sockets.
 */
const ECHO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n`;
const channels = (pause: number, proxies = '') => `
server: { refusal_pause_ms: ${pause}${proxies} }
channel_rest:
  - name: capped
    url_path: /capped
    service: echo
    security: none
    rate_limiting: [{ cidr_list: [], time_range: [{ is_all_day: true, limit: 1, limit_unit: hour }] }]
  - { name: open, url_path: /open, service: echo, security: none }
`;

/** Status and milliseconds of each request, made one after another on one connection; POSTs carry a body the refusal leaves unread. */
async function sequence(url: string, paths: string[], method: 'GET' | 'POST' = 'GET'): Promise<Array<[number, number]>> {
  const client = new Client(url, { pipelining: 1 });
  try {
    const out: Array<[number, number]> = [];
    for (const path of paths) {
      const t0 = performance.now();
      const res = await client.request(method === 'GET' ? { method, path } : { method, path, body: JSON.stringify({ pad: 'x'.repeat(20_000) }), headers: { 'content-type': 'application/json' } });
      await res.body.dump();
      out.push([res.statusCode, performance.now() - t0]);
    }
    return out;
  } finally {
    await client.close();
  }
}

describe('the pause after a refusal', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: channels(400), services: { 'echo.ts': ECHO }, listen: true });
  });
  afterAll(() => k?.close());

  it("holds the refused connection's next request for the pause, not another connection's", async () => {
    const [first, refused, next] = await sequence(k.url!, ['/capped', '/capped', '/open']);
    expect(first![0]).toBe(200);
    expect(refused![0]).toBe(429);
    expect(next![0]).toBe(200);
    expect(next![1]).toBeGreaterThanOrEqual(290); // 400 ms less up to a quarter at random
    // A new connection is not held, and a connection without a refusal is not either.
    const [fresh, again] = await sequence(k.url!, ['/open', '/open']);
    expect(fresh![0]).toBe(200);
    expect(fresh![1]).toBeLessThan(300);
    expect(again![1]).toBeLessThan(300);
  });

  it('holds it too when the refusal left a request body unread', async () => {
    const [refused, next] = await sequence(k.url!, ['/capped', '/open'], 'POST');
    expect(refused![0]).toBe(429);
    expect(next![0]).toBe(200);
    expect(next![1]).toBeGreaterThanOrEqual(290); // 400 ms less up to a quarter at random
  });
});

describe('without the pause, and for a trusted proxy', () => {
  for (const [what, config] of [
    ['refusal_pause_ms: 0', channels(0)],
    ['a trusted proxy', channels(400, ', trusted_proxies: [127.0.0.1, "::1", "::ffff:127.0.0.1"]')],
  ] as const) {
    it(`reads the next request at once with ${what}`, async () => {
      const k = await startKernel({ config, services: { 'echo.ts': ECHO }, listen: true });
      try {
        const [, refused, next] = await sequence(k.url!, ['/capped', '/capped', '/open']);
        expect(refused![0]).toBe(429);
        expect(next![1]).toBeLessThan(300);
      } finally {
        await k.close();
      }
    });
  }
});

/** A raw connection: what it has received so far, and whether the server closed it. */
function rawConnection(url: string): { socket: Socket; received: () => string; ended: Promise<void> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let text = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => text, ended };
}

async function until(what: () => boolean, ms = 5_000): Promise<void> {
  for (const end = Date.now() + ms; !what(); ) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Sends the request that waits on the held connection, checks it is held, shuts the kernel down; how long that took, ms. */
async function shutDownWhileHeld(k: TestKernel, c: ReturnType<typeof rawConnection>, waiting: string): Promise<number> {
  c.socket.write(waiting);
  await new Promise((r) => setTimeout(r, 100));
  expect(c.received().match(/HTTP\/1.1/g)).toHaveLength(2); // held: nothing read since the 429
  const t0 = performance.now();
  await k.close();
  const ms = performance.now() - t0;
  await c.ended;
  return ms;
}

/** The last answer on a connection: 503 with connection: close and the CID. */
function expectClosing503(received: string): void {
  const last = received.slice(received.lastIndexOf('HTTP/1.1'));
  expect(last).toMatch(/^HTTP\/1.1 503/);
  expect(last.toLowerCase()).toContain('connection: close');
  expect(last.toLowerCase()).toMatch(/x-svc-cid: [0-9a-f]{22}/);
}

describe('shutdown with connections held after a refusal', () => {
  // A refusal answered from the headers alone leaves the body unread; the connection is held
  // with the rest of it, so Node counts it busy and closing idle connections passes it by.
  const BODY = 20_000;
  const post = (path: string) => `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${BODY}\r\n\r\n`;

  for (const next of [true, false]) {
    it(`does not wait for the pause ${next ? '(a request waits behind the body: answered 503 with connection: close)' : '(nothing after the body: the connection is closed as it falls idle)'}`, async () => {
      const k = await startKernel({ config: channels(4_000), services: { 'echo.ts': ECHO }, listen: true });
      const c = rawConnection(k.url!);
      try {
        c.socket.write('GET /capped HTTP/1.1\r\nhost: x\r\n\r\n');
        await until(() => /^HTTP\/1.1 200/.test(c.received()));
        c.socket.write(post('/capped') + '{"pad":"');
        await until(() => c.received().includes('HTTP/1.1 429'));
        await new Promise((r) => setTimeout(r, 200)); // the pause has begun
        const ms = await shutDownWhileHeld(k, c, 'x'.repeat(BODY - 10) + '"}' + (next ? 'GET /open HTTP/1.1\r\nhost: x\r\n\r\n' : ''));
        expect(ms).toBeLessThan(2_000); // the pause is 3,000-4,000 ms
        if (next) expectClosing503(c.received());
        else {
          expect(c.received().match(/HTTP\/1.1/g)).toHaveLength(2);
        }
      } finally {
        c.socket.destroy();
        await k.close();
      }
    });
  }

  // A refusal of a bodiless request leaves nothing unread: the held connection looks idle to Node,
  // whose close destroyed it with the next request unread in it, and the client got a reset.
  it('answers a request waiting on a connection held after a bodiless refusal 503 with connection: close, not a reset', async () => {
    const k = await startKernel({ config: channels(4_000), services: { 'echo.ts': ECHO }, listen: true });
    const c = rawConnection(k.url!);
    let reset = false;
    c.socket.on('error', () => (reset = true));
    try {
      c.socket.write('GET /capped HTTP/1.1\r\nhost: x\r\n\r\n');
      await until(() => /^HTTP\/1.1 200/.test(c.received()));
      c.socket.write('GET /capped HTTP/1.1\r\nhost: x\r\n\r\n');
      await until(() => c.received().includes('HTTP/1.1 429'));
      await new Promise((r) => setTimeout(r, 200)); // the pause has begun
      const ms = await shutDownWhileHeld(k, c, 'GET /open HTTP/1.1\r\nhost: x\r\n\r\n');
      expect(ms).toBeLessThan(2_000); // the pause is 3,000-4,000 ms
      expect(reset, 'the connection was reset').toBe(false);
      expectClosing503(c.received());
    } finally {
      c.socket.destroy();
      await k.close();
    }
  });
});
