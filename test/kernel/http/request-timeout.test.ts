import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin, type AdminKernel } from '../../plugins/admin/api/support.ts';

/**
 * server.request_timeout_ms: a client that takes longer than this to send a whole request
 * (headers and body) gets 408 with svc's body and a CID, and its connection is closed; on the
 * channel listener and the admin listener alike. Fastify turns Node's own limit off, so without
 * it a client sending one byte a minute holds a connection for good.
 */
const LIMIT_MS = 1000;

let k: AdminKernel;
beforeAll(async () => {
  k = await startAdmin({
    config: `
server: { request_timeout_ms: ${LIMIT_MS} }
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none }
`,
  });
}, 60_000);
afterAll(() => k?.close());

/** Sends `first`, then nothing more (or `rest` after `restAfterMs`); resolves with what came back and when the server closed. */
function slowClient(base: string, first: string, rest?: { text: string; afterMs: number }): Promise<{ response: string; closedAfterMs: number }> {
  const { port, hostname } = new URL(base);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(Number(port), hostname);
    let response = '';
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => (response += c));
    socket.on('close', () => resolve({ response, closedAfterMs: Date.now() - started }));
    socket.on('error', reject);
    socket.write(first);
    if (rest) setTimeout(() => socket.writable && socket.write(rest.text), rest.afterMs);
  });
}

function parse(response: string): { status: number; cid: string | undefined; body: Record<string, unknown> } {
  const [head, body] = response.split('\r\n\r\n');
  return { status: Number(head!.split(' ')[1]), cid: /\r\nx-svc-cid: ([0-9a-f]+)/i.exec(head!)?.[1], body: JSON.parse(body!) as Record<string, unknown> };
}

const slowBody = 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":';

describe('a request not received whole within request_timeout_ms', () => {
  it('a body that stops coming: 408 with the CID, and the connection closed', async () => {
    const { response, closedAfterMs } = await slowClient(k.url!, slowBody);
    const r = parse(response);
    expect(r.status).toBe(408);
    expect(r.cid).toBeTruthy();
    expect(r.body).toEqual({ result: 'Error', cid: r.cid, details: 'Request timeout' });
    // The limit, plus at most the sweep's period (a tenth of it) and some scheduling.
    expect(closedAfterMs).toBeGreaterThanOrEqual(LIMIT_MS - 50);
    expect(closedAfterMs).toBeLessThan(LIMIT_MS * 3);
  });

  it('headers that stop coming: the same', async () => {
    const { response } = await slowClient(k.url!, 'GET /echo HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const r = parse(response);
    expect(r.status).toBe(408);
    expect(r.body.cid).toBe(r.cid);
  });

  it('the admin listener: the same', async () => {
    const { response } = await slowClient(k.admin, 'POST /admin/api/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
    const r = parse(response);
    expect(r.status).toBe(408);
    expect(r.body).toEqual({ result: 'Error', cid: r.cid, details: 'Request timeout' });
  });

  it('a body sent within the limit, if slowly, is served', async () => {
    const body = '{"a":1}';
    const head = `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const { response } = await slowClient(k.url!, head + body.slice(0, 3), { text: body.slice(3), afterMs: LIMIT_MS / 2 });
    expect(response.split(' ')[1]).toBe('200');
  });

  it('the server keeps serving', async () => {
    expect((await fetch(`${k.url}/echo`)).status).toBe(200);
  });
});
