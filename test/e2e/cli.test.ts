import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { makeProject, runCli, startCli, type CliServer } from '../helpers/cli.ts';
import { HeldCalls } from '../helpers/held-calls.ts';
import { waitFor } from '../helpers/wait.ts';

const config = `
server:
  data_dir: ./data
  services_dir: ./services
channel_rest:
  - { name: hello, url_path: '/hello/{name}', service: hello, security: none, method: GET }
  - { name: slow, url_path: /slow, service: slow, security: none }
`;
const services = {
  'hello.ts': `import { service, t } from 'svc/sdk';\nexport default service({ input: { name: t.string() }, handle: (ctx) => ({ hello: ctx.input.name }) });\n`,
  // In flight until the test releases it: it reports to the outgoing connection 'gate' (HeldCalls) and awaits the answer.
  'slow.js': `import { service, outgoing } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 60000 }, async handle(ctx) { const res = await outgoing('gate').post(ctx.cid, { payload: { tag: 'slow' } }); return { done: res.ok }; } });\n`,
};

let server: CliServer;
beforeAll(async () => {
  server = await startCli(makeProject(config, services));
}, 60_000);
afterAll(async () => {
  if (server.proc.exitCode === null) await server.stop('SIGKILL');
});

describe('svc start (real socket)', () => {
  it('serves a channel with the CID header', async () => {
    const res = await request(`${server.url}/hello/Ann`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-svc-cid']).toBeTruthy();
    expect(await res.body.json()).toEqual({ hello: 'Ann' });
  });

  it('answers 404 and 405 with the CID', async () => {
    const missing = await request(`${server.url}/nope`);
    expect(missing.statusCode).toBe(404);
    expect(((await missing.body.json()) as { cid: string }).cid).toBe(missing.headers['x-svc-cid']);
    const wrong = await request(`${server.url}/hello/Ann`, { method: 'DELETE' });
    expect(wrong.statusCode).toBe(405);
    await wrong.body.dump();
  });

  it('answers many concurrent requests', async () => {
    const all = await Promise.all(Array.from({ length: 200 }, (_, i) => request(`${server.url}/hello/n${i}`).then(async (r) => [r.statusCode, await r.body.json()])));
    all.forEach(([status, body], i) => {
      expect(status).toBe(200);
      expect(body).toEqual({ hello: `n${i}` });
    });
  });

  it('logs one line per request with CID, channel, status and duration', async () => {
    const res = await request(`${server.url}/hello/Log`);
    await res.body.dump();
    const cid = res.headers['x-svc-cid'] as string;
    const line = await waitFor(`the request line of ${cid}`, () => server.output().split('\n').find((l) => l.includes(cid) && l.includes('"msg":"request"')), 10_000);
    expect(JSON.parse(line)).toMatchObject({ cid, channel: 'hello', status: 200, method: 'GET' });
    expect(typeof JSON.parse(line).ms).toBe('number');
  });

  it('svc service history, show and rollback: a saved version and a rollback to the first, through the running server', async () => {
    writeFileSync(join(server.dir, 'services', 'hello.ts'), services['hello.ts'].replace('hello: ctx', 'hi: ctx'));
    await waitFor('the new version serving', async () => ((await (await request(`${server.url}/hello/Ann`)).body.json()) as { hi?: string }).hi === 'Ann', 10_000);
    const history = runCli(['service', 'history', 'hello', '--json'], server.dir);
    expect(history.status, history.stderr).toBe(0);
    expect((JSON.parse(history.stdout) as { versions: Array<{ version: number; origin: string }> }).versions.map((v) => [v.version, v.origin])).toEqual([
      [2, 'file'],
      [1, 'file'],
    ]);
    expect(runCli(['service', 'show', 'hello', '1'], server.dir).stdout).toBe(services['hello.ts']);
    const rollback = runCli(['service', 'rollback', 'hello', '1'], server.dir);
    expect(rollback.stdout).toBe('hello: version 1 deployed again from hello.ts, now version 3\n');
    expect(await (await request(`${server.url}/hello/Ann`)).body.json()).toEqual({ hello: 'Ann' });
    expect(runCli(['service', 'history', 'hello'], server.dir).stdout.split('\n')[0]).toMatch(/^ {3}3 {2}\S+Z {2}[0-9a-f]{12} {2}rollback by cli on \S+ {2}hello\.ts \(\d+ bytes\)$/);
    expect(runCli(['service', 'rollback', 'hello', '9'], server.dir)).toMatchObject({ status: 1, stderr: "the server refused: service 'hello' has no version 9\n" });
  });

  it('a second server with another port and data_dir runs beside it', async () => {
    const other = await startCli(makeProject(config.replace('./data', './data2'), services));
    try {
      expect(other.url).not.toBe(server.url);
      const res = await request(`${other.url}/hello/Two`);
      expect(await res.body.json()).toEqual({ hello: 'Two' });
    } finally {
      expect(await other.stop()).toBe(0);
    }
  }, 60_000);
});

// A server of its own: this one is stopped, so no other test can depend on it being up.
describe('svc start: SIGTERM', () => {
  const gate = new HeldCalls();
  let draining: CliServer;
  beforeAll(async () => {
    await gate.start();
    draining = await startCli(makeProject(`${config}outgoing_rest:\n  - ${gate.outgoing('gate')}\n`, services));
  }, 60_000);
  afterAll(async () => {
    if (draining?.proc.exitCode === null) await draining.stop('SIGKILL');
    await gate.close();
  });

  it('drains the request in flight: its answer, a success, comes after the signal; then exit 0', async () => {
    let answeredAfterRelease: boolean | undefined;
    let released = false;
    const inflight = request(`${draining.url}/slow`).then(async (r) => {
      answeredAfterRelease = released;
      return [r.statusCode, await r.body.json()];
    });
    // The service has started and waits on the gate: the call is provably in flight.
    await gate.waitHeld('slow');
    const exit = draining.stop('SIGTERM');
    await waitFor('the shutdown to begin', () => draining.output().includes('"msg":"shutting down'), 10_000);
    // Draining: the process waits for the call, which waits for the test.
    expect(draining.proc.exitCode).toBe(null);
    expect(answeredAfterRelease).toBeUndefined();
    released = true;
    expect(gate.release('slow')).toBe(1);
    expect(await inflight).toEqual([200, { done: true }]);
    expect(answeredAfterRelease).toBe(true);
    expect(await exit).toBe(0);
    expect(draining.output()).toContain('"msg":"svc stopped"');
  }, 60_000);
});

describe('svc check and exit codes', () => {
  it('exits 0 on a valid project', () => {
    const r = runCli(['check', 'config/svc.yaml'], makeProject(config, services));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('exits 2 and prints every error at once: config paths and service compile errors', () => {
    const bad = config.replace("url_path: /slow", 'url_path: slow') + '  - { name: x, url_path: /x, service: broken, security: none }\n';
    const r = runCli(['check', 'config/svc.yaml'], makeProject(bad, { ...services, 'broken.ts': 'export default service({ handle( });' }));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('config error: channel_rest[1].url_path: must start with /');
    expect(r.stderr).toMatch(/service error: broken\.ts:1:\d+/);
    const missing = runCli(['check', 'config/svc.yaml'], makeProject(config + '  - { name: x, url_path: /x, service: nosuch, security: none }\n', services));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain("channel_rest[2].service: no service 'nosuch'");
  });

  it('start with an invalid config exits 2 naming the path', () => {
    const r = runCli(['start', '--config', 'config/svc.yaml'], makeProject('server:\n  port: nope\n'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('server.port');
  });

  it('an unknown command exits 2', () => {
    expect(runCli(['frobnicate'], makeProject(config)).status).toBe(2);
  });
});

describe('svc commands and the data directory', () => {
  it('a command that creates the store says where, and that data_dir is taken from the working directory', () => {
    const project = makeProject(config, services);
    const elsewhere = mkdtempSync(join(tmpdir(), 'svc-elsewhere-'));
    try {
      const args = (key: string) => ['admin', 'create-key', key, '--config', join(project, 'config', 'svc.yaml')];
      const first = runCli(args('deploy'), elsewhere);
      expect(first.status).toBe(0);
      expect(first.stderr).toContain(`note: there is no store at ${join(elsewhere, 'data', 'svc.db')} yet: this command creates it.`);
      expect(first.stderr).toContain(`taken from the working directory (${elsewhere})`);
      // The store exists now: no note, the key is made.
      const second = runCli(args('deploy-2'), elsewhere);
      expect(second.status).toBe(0);
      expect(second.stderr).toBe('');
      expect(second.stdout).toContain("API key 'deploy-2'");
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
      rmSync(project, { recursive: true, force: true });
    }
  });
});
