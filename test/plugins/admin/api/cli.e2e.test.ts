import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../../helpers/cli.ts';
import { AdminClient, echoService } from './support.ts';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';

/** `svc start` with the admin listener, and the admin CLI commands against it, as real processes. */

let server: CliServer;
let admin: string;
let dir: string;

beforeAll(async () => {
  // Tenants do not start on Node 20 (docs/tenants.md): the tenant account case runs on Node 22 and 24.
  dir = makeProject((TENANTS_RUN_HERE ? 'tenants:\n  - { name: acme }\n' : '') + 'channel_rest:\n  - { name: a, url_path: /a, service: echo, security: none }\n', { 'echo.ts': echoService });
  server = await startCli(dir);
  const m = await waitFor(() => /"address":"(http:\/\/[^"]+)"[^\n]*"msg":"svc admin listening"/.exec(server.output()));
  admin = m[1]!;
}, 40_000);
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function waitFor<T>(fn: () => T | null | undefined): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const v = fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out:\n${server.output()}`);
}

describe('svc admin, export and import', () => {
  it('prints a random admin password once at first start, never in a log line', async () => {
    // In the startup summary on stderr, written just after the server listens.
    const m = await waitFor(() => /\n {2}first start: the admin password is (\S+) \(shown once/.exec(server.output()));
    const password = m![1]!;
    expect(server.output().split(password).length - 1).toBe(1);
    expect((await new AdminClient(admin).login(password)).status).toBe(200);
  });

  it('set-password from stdin applies to the running server', async () => {
    const r = runCli(['admin', 'set-password'], dir, 'a-cli-password\n');
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('the running server uses it now');
    expect((await new AdminClient(admin).login('a-cli-password')).status).toBe(200);
    expect(server.output()).not.toContain('a-cli-password');
  });

  it('create-key prints a key once; it works as a bearer key; delete-key revokes it', async () => {
    const r = runCli(['admin', 'create-key', 'deploy'], dir);
    expect(r.status).toBe(0);
    const key = r.stdout.trim().split('\n').at(-1)!;
    expect(key).toMatch(/^svcadm_/);
    const c = new AdminClient(admin);
    c.bearer = key;
    expect((await c.get('/admin/api/resources')).status).toBe(200);
    expect(runCli(['admin', 'create-key', 'deploy'], dir).status).toBe(1);
    expect(runCli(['admin', 'delete-key', 'deploy'], dir).status).toBe(0);
    expect((await c.get('/admin/api/resources')).status).toBe(401);
  });

  it.runIf(TENANTS_RUN_HERE)("add-user and create-key --tenant --role make a tenant's account and key, checked before anything is sent", async () => {
    const added = runCli(['admin', 'add-user', 'dev', '--role', 'developer', '--tenant', 'acme'], dir, 'a-tenant-password\n');
    expect(added.stderr).toBe('');
    expect(added.stdout).toContain("account 'acme/dev' (developer of acme) created");
    const dev = new AdminClient(admin);
    const login = await dev.send('POST', '/admin/api/login', { username: 'acme/dev', password: 'a-tenant-password' });
    expect(login.body).toMatchObject({ user: 'acme/dev', role: 'developer', tenant: 'acme' });
    const key = runCli(['admin', 'create-key', 'ci', '--tenant=acme', '--role=viewer'], dir);
    expect(key.status).toBe(0);
    const c = new AdminClient(admin);
    c.bearer = key.stdout.trim().split('\n').at(-1)!;
    expect((await c.get('/admin/api/session')).body).toEqual({ user: 'key:acme/ci', role: 'viewer', tenant: 'acme' });
    const refused = runCli(['admin', 'add-user', 'x', '--role', 'owner', '--tenant', 'nobody'], dir, 'a-tenant-password\n');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("no tenant 'nobody' in the config");
    expect(runCli(['admin', 'create-key', 'x', '--tenant', 'acme'], dir).status).toBe(2);
    expect(server.output()).not.toContain('a-tenant-password');
    // Four CLI processes, each a few seconds on a loaded machine.
  }, 60_000);

  it('import merges a file (all or nothing) and export writes the running config without secrets', async () => {
    const file = join(dir, 'import.yaml');
    writeFileSync(file, 'security:\n  - name: p\n    type: basic_auth\n    username: p\n    password: ${P_SECRET}\nchannel_rest:\n  - { name: b, url_path: /b, service: echo, security: nobody }\n');
    const refused = runCli(['import', file], dir);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('P_SECRET is not set');
    const bad = spawnImport(file, { P_SECRET: 'imported-secret' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("channel_rest[1].security: no security definition or group named 'nobody'");
    writeFileSync(file, 'security:\n  - name: p\n    type: basic_auth\n    username: p\n    password: ${P_SECRET}\nchannel_rest:\n  - { name: b, url_path: /b, service: echo, security: p }\n');
    const ok = spawnImport(file, { P_SECRET: 'imported-secret' });
    expect(ok.stdout).toContain('imported: 2 created, 0 replaced');
    const call = await fetch(`${server.url}/b`, { headers: { authorization: `Basic ${Buffer.from('p:imported-secret').toString('base64')}` } });
    expect(call.status).toBe(200);
    const exported = runCli(['export'], dir);
    expect(exported.status).toBe(0);
    expect(exported.stdout).toContain('password: ${SVC_SECRET_SECURITY_P_PASSWORD}');
    expect(exported.stdout).toContain('url_path: /b');
    expect(exported.stdout).not.toContain('imported-secret');
  });
});

function spawnImport(file: string, env: Record<string, string>) {
  return runCli(['import', file], dir, undefined, env);
}
