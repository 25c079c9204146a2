import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin, type AdminKernel } from '../../plugins/admin/api/support.ts';
import { parseRaw, rawHttp } from '../../helpers/raw-http.ts';

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

const slowClient = (base: string, first: string, later?: { text: string; afterMs: number }) => rawHttp(base, first, { later });
const parse = parseRaw;

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
