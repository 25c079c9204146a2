import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { makeProject, startCli, type CliServer } from '../helpers/cli.ts';

/** The channel behaviours of issue 2 once more, against `svc start` over a real socket. */

const config = `
server:
  data_dir: ./data
  services_dir: ./services
channel_rest:
  - { name: typed, url_path: '/typed/{id}', service: typed, security: none }
  - { name: verbs, url_path: '/things/{id}', service: verbs, security: none }
  - { name: raises, url_path: '/raise/{kind}', service: raises, security: none }
  - { name: loop, url_path: /loop, service: loop, security: none }
  - { name: crash, url_path: /crash, service: crash, security: none }
`;
const services: Record<string, string> = {
  'typed.ts': `import { service, t } from 'svc/sdk';\nexport default service({ input: { id: t.integer(), name: t.string(), vip: t.boolean({ default: false }) }, handle: (ctx) => ctx.input });\n`,
  'verbs.ts': `import { service } from 'svc/sdk';\nexport default service({ GET: () => ({ verb: 'get' }), POST: (ctx) => { ctx.response.status = 201; ctx.response.headers['Location'] = '/things/2'; return { created: true }; }, DELETE: (ctx) => { ctx.response.status = 204; } });\n`,
  'raises.ts': `import { service, NotFound, Conflict, TooManyRequests } from 'svc/sdk';\nexport default service({ handle(ctx) { if (ctx.input.kind === 'nf') throw new NotFound('no such thing'); if (ctx.input.kind === 'conflict') throw new Conflict('exists'); if (ctx.input.kind === 'busy') throw new TooManyRequests('slow down', 29.2); if (ctx.input.kind === 'busy-own') { ctx.response.headers['retry-after'] = '5'; throw new TooManyRequests('slow down'); } throw new Error('internal detail'); } });\n`,
  'loop.js': `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 300 }, handle() { for (;;) {} } });\n`,
  'crash.js': `import { service } from 'svc/sdk';\nexport default service({ handle: () => '1'.repeat(0xfffffff).split('') });\n`,
};

let server: CliServer;
let dir: string;
beforeAll(async () => {
  dir = makeProject(config, services);
  server = await startCli(dir);
}, 60_000);
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop('SIGKILL');
});

async function call(method: string, path: string, body?: unknown) {
  const res = await request(`${server.url}${path}`, {
    method: method as 'GET',
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

describe('channels over a real socket', () => {
  it('merges path and payload, applies the typed model, and answers 400 naming the field', async () => {
    expect((await call('POST', '/typed/7', { name: 'Ann' })).json()).toEqual({ id: 7, name: 'Ann', vip: false });
    const bad = await call('POST', '/typed/seven', { name: 'Ann' });
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({ result: 'Error', cid: bad.headers['x-svc-cid'], details: "Invalid input: field 'id' must be an integer" });
  });

  it('dispatches verbs: 201 with Location, 204 without a body, 405 with Allow', async () => {
    const created = await call('POST', '/things/1', {});
    expect([created.status, created.headers.location]).toEqual([201, '/things/2']);
    const deleted = await call('DELETE', '/things/1');
    expect([deleted.status, deleted.text]).toEqual([204, '']);
    const put = await call('PUT', '/things/1', {});
    expect([put.status, put.headers.allow]).toEqual([405, 'GET, POST, DELETE']);
  });

  it('maps service exceptions to statuses with the CID in body and header', async () => {
    const nf = await call('GET', '/raise/nf');
    expect([nf.status, nf.json()]).toEqual([404, { result: 'Error', cid: nf.headers['x-svc-cid'], details: 'no such thing' }]);
    expect((await call('GET', '/raise/conflict')).status).toBe(409);
    // TooManyRequests' retryAfterSeconds is the answer's Retry-After (whole seconds), unless the service set the header itself.
    const busy = await call('GET', '/raise/busy');
    expect([busy.status, busy.headers['retry-after'], busy.json().details]).toEqual([429, '30', 'slow down']);
    const own = await call('GET', '/raise/busy-own');
    expect([own.status, own.headers['retry-after']]).toEqual([429, '5']);
    const internal = await call('GET', '/raise/other');
    expect(internal.status).toBe(500);
    expect(internal.text).not.toContain('internal detail');
  });

  it('stops an infinite loop at its limit and keeps serving', async () => {
    const res = await call('GET', '/loop');
    expect(res.status).toBe(503);
    expect((await call('GET', '/things/1')).status).toBe(200);
  });

  it('survives input that crashes isolated-vm: that request fails, the server and other channels go on', async () => {
    const res = await call('GET', '/crash');
    expect(res.status).toBe(503);
    expect(res.json().cid).toBe(res.headers['x-svc-cid']);
    for (let i = 0; i < 5; i++) expect((await call('GET', '/things/1')).json()).toEqual({ verb: 'get' });
    expect(server.proc.exitCode).toBeNull();
  });

  it('hot-deploys a new service file and applies a config change, without a restart', async () => {
    writeFileSync(join(dir, 'services', 'fresh.ts'), `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ fresh: true }) });\n`);
    const file = join(dir, 'config', 'svc.yaml');
    writeFileSync(file, readFileSync(file, 'utf8') + `  - { name: fresh, url_path: /fresh, service: fresh, security: none }\n`);
    let res = await call('GET', '/fresh');
    for (let i = 0; i < 60 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await call('GET', '/fresh');
    }
    expect(res.json()).toEqual({ fresh: true });
    unlinkSync(join(dir, 'services', 'fresh.ts'));
    for (let i = 0; i < 60 && res.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await call('GET', '/fresh');
    }
    expect(res.status).toBe(500);
    expect(res.json().details).toBe("Service 'fresh' is not deployed");
  });
});
