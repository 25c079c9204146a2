import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import apiKeyPlugin from '../../../../plugins/security/apikey/plugin.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { basic, expectUnauthorized, runCli, WHOAMI } from '../support.ts';

const setKey = apiKeyPlugin.cli!.find((c) => c.words.join(' ') === 'secdef set-key')!;

const CONFIG = `
security:
  - { name: billing, type: apikey, key: billing-key-0001 }
  - { name: reports, type: apikey, key: "\${REPORTS_KEY}" }
  - { name: newapp, type: apikey }
channel_rest:
  - { name: billing, url_path: /billing, service: whoami, security: billing }
  - { name: reports, url_path: /reports, service: whoami, security: reports }
  - { name: newapp, url_path: /newapp, service: whoami, security: newapp }
`;

describe('API key channels', () => {
  let k: TestKernel;
  const logs: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    k = await startKernel({ config: CONFIG, services: WHOAMI, env: { REPORTS_KEY: 'reports-key-from-env' }, listen: true, logs });
  });
  afterAll(() => k?.close());

  const get = (url: string, headers: Record<string, string | string[]> = {}) => k.app.inject({ method: 'GET', url, headers });

  it('lets a valid X-API-Key in and names the definition to the service', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await get('/billing', { 'x-api-key': 'billing-key-0001' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ user: { type: 'apikey', definition: 'billing', username: 'billing' } });
    }
    expect((await get('/reports', { 'X-API-Key': 'reports-key-from-env' })).statusCode).toBe(200);
  });

  it.each<[string, Record<string, string | string[]>]>([
    ['no X-API-Key', {}],
    ['an empty key', { 'x-api-key': '' }],
    ['the wrong key', { 'x-api-key': 'billing-key-0002' }],
    ['a prefix of the key', { 'x-api-key': 'billing-key-000' }],
    ['a longer key', { 'x-api-key': 'billing-key-00011' }],
    ['the key in another case', { 'x-api-key': 'BILLING-KEY-0001' }],
    ['another definition’s key', { 'x-api-key': 'reports-key-from-env' }],
    ['two X-API-Key headers', { 'x-api-key': ['billing-key-0001', 'billing-key-0001'] }],
    ['a comma-separated pair', { 'x-api-key': 'billing-key-0001, billing-key-0001' }],
    ['a huge key', { 'x-api-key': 'k'.repeat(5000) }],
    ['the key as Basic Auth', { authorization: basic('billing', 'billing-key-0001') }],
  ])('answers 401 without a challenge for %s', async (_label, headers) => {
    expectUnauthorized(await get('/billing', headers), undefined);
  });

  it('rotates a key with the CLI while running; the old key stops at once', async () => {
    expect((await get('/billing', { 'x-api-key': 'billing-key-0001' })).statusCode).toBe(200);
    const cli = await runCli(k, setKey, ['billing'], 'billing-key-0002\n');
    expect(cli).toMatchObject({ code: 0, err: [] });
    expectUnauthorized(await get('/billing', { 'x-api-key': 'billing-key-0001' }), undefined);
    expect((await get('/billing', { 'x-api-key': 'billing-key-0002' })).statusCode).toBe(200);
  });

  it('refuses a key that could not travel in the header', async () => {
    const cli = await runCli(k, setKey, ['billing'], 'has a space');
    expect(cli.code).toBe(2);
    expect(cli.err.join()).toContain('printable ASCII without spaces or commas');
  });

  it('gives a definition without a key a random one and asks for it to be set', async () => {
    expectUnauthorized(await get('/newapp', { 'x-api-key': 'newapp' }), undefined);
    expect(logs.some((l) => l.definition === 'newapp' && l.level === 40 && String(l.msg).includes('svc secdef set-key newapp'))).toBe(true);
    expect((await runCli(k, setKey, ['newapp'], 'newapp-key')).code).toBe(0);
    expect((await get('/newapp', { 'x-api-key': 'newapp-key' })).statusCode).toBe(200);
  });

  it('never logs a key', () => {
    const text = JSON.stringify(logs);
    for (const key of ['billing-key-0001', 'billing-key-0002', 'reports-key-from-env', 'newapp-key']) expect(text).not.toContain(key);
  });
});
