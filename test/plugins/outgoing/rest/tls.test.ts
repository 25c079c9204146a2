import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/** https addresses: a private CA is trusted through tls.ca_file; an unknown certificate is a tls failure, not retried. */
const dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
let server: Server;
let hits = 0;
let refusedHandshakes = 0;
let k: TestKernel;

const CALLER = `import { service, outgoing, OutgoingError } from 'svc/sdk';
export default service({ async POST(ctx) {
  try { const r = await outgoing(ctx.payload.conn).get(ctx.cid); return { status: r.status, data: r.data }; }
  catch (e) { return { failed: e instanceof OutgoingError ? e.kind : String(e) }; }
} });
`;

beforeAll(async () => {
  // A self-signed certificate for 127.0.0.1, made for this run.
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=svc-test', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"secure":true}');
  });
  server.on('tlsClientError', () => refusedHandshakes++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const at = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  k = await startKernel({
    config: `
channel_rest:
  - { name: c, url_path: /c, service: caller, security: none }
outgoing_rest:
  - { name: trusted, address: "${at}", tls: { ca_file: "${join(dir, 'cert.pem')}" } }
  - { name: unknown, address: "${at}", retry: { max_attempts: 3, base_backoff_ms: 1, max_backoff_ms: 2 } }
  - { name: careless, address: "${at}", tls: { reject_unauthorized: false } }
`,
    services: { 'caller.ts': CALLER },
  });
});
afterAll(async () => {
  await k?.close();
  server?.close();
});

const call = async (conn: string) => (await k.app.inject({ method: 'POST', url: '/c', payload: { conn } })).json();

describe('outgoing connections over TLS', () => {
  it('trust a private CA given in tls.ca_file', async () => {
    expect(await call('trusted')).toEqual({ status: 200, data: { secure: true } });
  });

  it('refuse an unknown certificate without retrying, and connect when verification is off', async () => {
    hits = 0;
    expect(await call('unknown')).toEqual({ failed: 'tls' });
    expect(hits).toBe(0);
    await expect.poll(() => refusedHandshakes).toBe(1);
    expect(await call('careless')).toEqual({ status: 200, data: { secure: true } });
  });
});
