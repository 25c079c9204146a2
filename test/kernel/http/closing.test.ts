import { request } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HeldCalls } from '../../helpers/held-calls.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Shutdown: an answer made after close() began says `connection: close`, so keep-alive clients
 * do not hold the server open; every answer still carries its CID.
 */
const gate = new HeldCalls();
const config = () => `
channel_rest:
  - { name: slow, url_path: /slow, service: slow, security: none }
  - { name: fast, url_path: /fast, service: fast, security: none }
outgoing_rest:
  - ${gate.outgoing('gate')}
`;
const SERVICES = {
  // In flight until the test releases it.
  'slow.js': `import { service, outgoing } from 'svc/sdk';\nexport default service({ async handle(ctx) { await outgoing('gate').post(ctx.cid, { payload: { tag: 'slow' } }); return { slow: true }; } });`,
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
  await gate.start();
  k = await startKernel({ config: config(), services: SERVICES, listen: true });
});
afterAll(async () => {
  await k?.close();
  await gate.close();
});

describe('answers while the server closes', () => {
  it('keep the connection before close() and close it after', async () => {
    const before = await get(`${k.url}/fast`);
    expect(before.status).toBe(200);
    expect(before.headers.connection).toBe('keep-alive');
    expect(before.headers['x-svc-cid']).toMatch(/^[0-9a-f]{22}$/);

    const inFlight = get(`${k.url}/slow`);
    await gate.waitHeld('slow');
    // close() marks the kernel closing at once; the call, held until now, is answered after that.
    const closed = k.close();
    expect(gate.release('slow')).toBe(1);
    const during = await inFlight;
    expect(during.status).toBe(200);
    expect(JSON.parse(during.body)).toEqual({ slow: true });
    expect(during.headers.connection).toBe('close');
    expect(during.headers['x-svc-cid']).toMatch(/^[0-9a-f]{22}$/);
    await closed;
  });
});

describe('a connection that has sent nothing', () => {
  it('does not hold the close (Node would wait for its headers for up to a minute)', async () => {
    const k2 = await startKernel({ config: config(), services: SERVICES, listen: true });
    const { hostname, port } = new URL(k2.url!);
    const spare = connect(Number(port), hostname);
    try {
      await new Promise<void>((r) => spare.once('connect', () => r()));
      const gone = new Promise<void>((r) => spare.once('close', () => r()));
      const t0 = performance.now();
      await k2.close();
      expect(performance.now() - t0).toBeLessThan(2_000);
      await gone;
    } finally {
      spare.destroy();
    }
  });
});
