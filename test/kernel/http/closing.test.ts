import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Shutdown: an answer made after close() began says `connection: close`, so keep-alive clients
 * do not hold the server open; every answer still carries its CID.
 */
const CONFIG = `
channel_rest:
  - { name: slow, url_path: /slow, service: slow, security: none }
  - { name: fast, url_path: /fast, service: fast, security: none }
`;
const SERVICES = {
  'slow.js': `import { service } from 'svc/sdk';\nexport default service({ handle: () => { const end = Date.now() + 400; while (Date.now() < end); return { slow: true }; } });`,
  'fast.js': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ fast: true }) });`,
};

function get(url: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { connection: 'keep-alive' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES, listen: true });
});
afterAll(() => k?.close());

describe('answers while the server closes', () => {
  it('keep the connection before close() and close it after', async () => {
    const before = await get(`${k.url}/fast`);
    expect(before.status).toBe(200);
    expect(before.headers.connection).toBe('keep-alive');
    expect(before.headers['x-svc-cid']).toMatch(/^[0-9a-f]{22}$/);

    const inFlight = get(`${k.url}/slow`);
    await new Promise((r) => setTimeout(r, 150));
    const closed = k.close();
    const during = await inFlight;
    expect(during.status).toBe(200);
    expect(JSON.parse(during.body)).toEqual({ slow: true });
    expect(during.headers.connection).toBe('close');
    expect(during.headers['x-svc-cid']).toMatch(/^[0-9a-f]{22}$/);
    await closed;
  });
});
