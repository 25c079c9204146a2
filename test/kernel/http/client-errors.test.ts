import { afterAll, beforeAll, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { parseRaw, rawHttp } from '../../helpers/raw-http.ts';

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: 'channel_rest:\n  - { name: ok, url_path: /ok, service: ok, security: none }',
    services: { 'ok.js': `import { service } from 'svc/sdk';\nexport default service({ handle() { return 'ok'; } });` },
    listen: true,
  });
});
afterAll(() => k?.close());

const raw = async (text: string) => (await rawHttp(k.url!, text, { end: true })).response;
const parse = parseRaw;

it.each([
  ['headers over 16 KiB', `GET /ok HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'Request header fields too large'],
  ['a DEL byte in a header value', 'GET /ok HTTP/1.1\r\nHost: x\r\nX-Bad: a\x7fb\r\n\r\n', 400, 'Malformed request'],
  ['a malformed request line', 'GARBAGE\r\n\r\n', 400, 'Malformed request'],
])('%s: svc answers with its error body and a CID', async (_name, request, status, details) => {
  const r = parse(await raw(request));
  expect(r.status).toBe(status);
  expect(r.cid).toBeTruthy();
  expect(r.body).toEqual({ result: 'Error', cid: r.cid, details });
  expect((await fetch(k.url + '/ok')).status).toBe(200);
});

it("a URL the router cannot decode (a malformed %-escape): svc's error body and a CID, not Fastify's", async () => {
  for (const path of ['/ok/%E0%A4%A', '/%']) {
    const r = parse(await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    expect(r.status).toBe(400);
    expect(r.cid).toBeTruthy();
    expect(r.body).toEqual({ result: 'Error', cid: r.cid, details: 'Malformed request: the URL is not valid (a malformed %-escape)' });
  }
  expect((await fetch(k.url + '/ok')).status).toBe(200);
});
