import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import '../../../../plugins/capabilities.ts';
import basicAuthPlugin from '../../../../plugins/security/basic-auth/plugin.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { basic, expectUnauthorized, runCli, WHOAMI } from '../support.ts';

const CHALLENGE = 'Basic realm="svc"';
const setPassword = basicAuthPlugin.cli!.find((c) => c.words.join(' ') === 'secdef set-password')!;

const CONFIG = `
security:
  - name: crm
    type: basic_auth
    username: crm-user
    password: \${CRM_PASSWORD}
  - name: erp
    type: basic_auth
    username: erp
    password: "erp:pass:word"
  - name: fresh
    type: basic_auth
    username: fresh
channel_rest:
  - { name: crm, url_path: /crm, service: whoami, security: crm }
  - { name: erp, url_path: /erp, service: whoami, security: erp }
  - { name: fresh, url_path: /fresh, service: whoami, security: fresh }
  - { name: open, url_path: /open, service: whoami, security: none }
`;

describe('Basic Auth channels', () => {
  let k: TestKernel;
  const logs: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    k = await startKernel({ config: CONFIG, services: WHOAMI, env: { CRM_PASSWORD: 'crm-secret' }, logs });
  });
  afterAll(() => k?.close());

  const get = (url: string, headers: Record<string, string | string[]> = {}) => k.app.inject({ method: 'GET', url, headers });

  it('lets valid credentials in and shows the service who called', async () => {
    const res = await get('/crm', { authorization: basic('crm-user', 'crm-secret') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ user: { type: 'basic_auth', definition: 'crm', username: 'crm-user' } });
    // Second time from the verified cache, scheme spelled differently.
    const again = await get('/crm', { authorization: basic('crm-user', 'crm-secret').replace('Basic', 'basic') });
    expect(again.statusCode).toBe(200);
  });

  it('keeps the credential header away from the service', async () => {
    const res = await get('/crm?headers=1', { authorization: basic('crm-user', 'crm-secret'), 'x-other': 'kept' });
    expect(res.statusCode).toBe(200);
    expect(res.json().headers['x-other']).toBe('kept');
    expect(res.json().headers.authorization).toBeUndefined();
    const open = await get('/open?headers=1', { authorization: 'Bearer for-the-service' });
    expect(open.json().headers.authorization).toBe('Bearer for-the-service');
  });

  it('accepts a password containing colons', async () => {
    const res = await get('/erp', { authorization: basic('erp', 'erp:pass:word') });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ user: { definition: 'erp', username: 'erp' } });
  });

  const b64 = (s: string) => Buffer.from(s).toString('base64');
  it.each<[string, Record<string, string | string[]>]>([
    ['no Authorization header', {}],
    ['another scheme', { authorization: 'Bearer abc.def' }],
    ['the scheme alone', { authorization: 'Basic' }],
    ['invalid base64', { authorization: 'Basic ***' }],
    ['base64 without padding', { authorization: `Basic ${b64('crm-user:crm-secret1').replace(/=+$/, '')}` }],
    ['no colon', { authorization: `Basic ${b64('crm-usercrm-secret')}` }],
    ['an empty username', { authorization: `Basic ${b64(':crm-secret')}` }],
    ['an empty password', { authorization: `Basic ${b64('crm-user:')}` }],
    ['the wrong password', { authorization: basic('crm-user', 'crm-secreT') }],
    ['a prefix of the password', { authorization: basic('crm-user', 'crm-secre') }],
    ['the wrong username', { authorization: basic('crm-usr', 'crm-secret') }],
    ['another definition’s valid credentials', { authorization: basic('erp', 'erp:pass:word') }],
    ['a huge password', { authorization: basic('crm-user', 'x'.repeat(4000)) }],
    ['invalid UTF-8', { authorization: `Basic ${Buffer.from([0x63, 0x3a, 0xc3, 0x28]).toString('base64')}` }],
    ['two credentials in one header', { authorization: `${basic('crm-user', 'crm-secret')}, ${basic('erp', 'x')}` }],
    ['an API key instead', { 'x-api-key': 'crm-secret' }],
  ])('answers 401 with a challenge for %s', async (_label, headers) => {
    expectUnauthorized(await get('/crm', headers), CHALLENGE);
  });

  it('needs no credentials on a channel with security none', async () => {
    const res = await get('/open');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ user: null });
  });

  it('gives a definition without a password a random one nobody knows, and says so in the log', async () => {
    expectUnauthorized(await get('/fresh', { authorization: basic('fresh', '') }), CHALLENGE);
    expectUnauthorized(await get('/fresh', { authorization: basic('fresh', 'fresh') }), CHALLENGE);
    const warning = logs.find((l) => l.definition === 'fresh' && l.level === 40);
    expect(String(warning?.msg)).toContain('svc secdef set-password fresh');
  });

  it('offers pub/sub the Basic Auth check of every definition', async () => {
    const authenticate = k.kernel.api.lookup('security.basic.authenticate')!;
    expect(await authenticate(basic('erp', 'erp:pass:word'))).toEqual({ type: 'basic_auth', definition: 'erp', username: 'erp' });
    expect(await authenticate(basic('erp', 'nope'))).toBeUndefined();
    expect(await authenticate('Basic !!')).toBeUndefined();
    expect(await authenticate(undefined)).toBeUndefined();
  });

  it('never logs a secret', () => {
    const text = JSON.stringify(logs);
    for (const secret of ['crm-secret', 'erp:pass:word', b64('crm-user:crm-secret')]) expect(text).not.toContain(secret);
  });
});

describe('Basic Auth secret rotation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-basic-rotate-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const env = { CRM_PASSWORD: 'crm-secret' };

  it('applies a password set with the CLI at once, and keeps it after a restart', async () => {
    const logs: Array<Record<string, unknown>> = [];
    const k = await startKernel({ config: CONFIG, services: WHOAMI, env, dir, listen: true, logs });
    try {
      const crm = (password: string) => k.app.inject({ method: 'GET', url: '/crm', headers: { authorization: basic('crm-user', password) } });
      expect((await crm('crm-secret')).statusCode).toBe(200);

      const cli = await runCli(k, setPassword, ['crm'], 'rotated: secret\n');
      expect(cli).toMatchObject({ code: 0, err: [] });
      expect(cli.out.join()).toContain('running server');
      expect((await crm('rotated: secret')).statusCode).toBe(200);
      expectUnauthorized(await crm('crm-secret'), CHALLENGE);

      // A reloaded config whose password value is unchanged does not bring the old password back.
      const sameValue = CONFIG.replace('${CRM_PASSWORD}', 'crm-secret').replace('url_path: /open', 'url_path: /open2');
      expect(await k.writeConfig(sameValue)).toBe(true);
      expect((await crm('rotated: secret')).statusCode).toBe(200);

      const generated = await runCli(k, setPassword, ['fresh'], 'now-known');
      expect(generated.code).toBe(0);
      const fresh = await k.app.inject({ method: 'GET', url: '/fresh', headers: { authorization: basic('fresh', 'now-known') } });
      expect(fresh.statusCode).toBe(200);
      expect(JSON.stringify(logs)).not.toContain('rotated: secret');
    } finally {
      await k.close();
    }

    const restarted = await startKernel({ config: CONFIG, services: WHOAMI, env, dir });
    try {
      const crm = (password: string) => restarted.app.inject({ method: 'GET', url: '/crm', headers: { authorization: basic('crm-user', password) } });
      expect((await crm('rotated: secret')).statusCode).toBe(200);
      expectUnauthorized(await crm('crm-secret'), CHALLENGE);
      const fresh = await restarted.app.inject({ method: 'GET', url: '/fresh', headers: { authorization: basic('fresh', 'now-known') } });
      expect(fresh.statusCode).toBe(200);
    } finally {
      await restarted.close();
    }
  });

  it('lets an edited config password win over the CLI one', async () => {
    const k = await startKernel({ config: CONFIG, services: WHOAMI, env: { CRM_PASSWORD: 'edited-in-env' }, dir });
    try {
      const crm = (password: string) => k.app.inject({ method: 'GET', url: '/crm', headers: { authorization: basic('crm-user', password) } });
      expect((await crm('edited-in-env')).statusCode).toBe(200);
      expectUnauthorized(await crm('rotated: secret'), CHALLENGE);
    } finally {
      await k.close();
    }
  });

  it('stores the password when no server runs', async () => {
    const k = await startKernel({ config: CONFIG, services: WHOAMI, env: { CRM_PASSWORD: 'edited-in-env' }, dir });
    await k.close();
    // The kernel is closed: no control socket answers, the CLI writes the store itself.
    const offline = await runCli(k, setPassword, ['erp'], 'set-offline');
    expect(offline.code).toBe(0);
    expect(offline.out.join()).toContain('no server is running');
    const again = await startKernel({ config: CONFIG, services: WHOAMI, env: { CRM_PASSWORD: 'edited-in-env' }, dir });
    try {
      const res = await again.app.inject({ method: 'GET', url: '/erp', headers: { authorization: basic('erp', 'set-offline') } });
      expect(res.statusCode).toBe(200);
    } finally {
      await again.close();
    }
  });
});
