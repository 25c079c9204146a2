import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { basic, expectUnauthorized, WHOAMI } from '../support.ts';

const CHALLENGE = 'Basic realm="svc"';

const config = (partners: string, keysOnly = '[reports]') => `
security:
  - { name: crm, type: basic_auth, username: crm, password: crm-pass }
  - { name: erp, type: basic_auth, username: erp, password: erp-pass }
  - { name: billing, type: apikey, key: billing-key }
  - { name: reports, type: apikey, key: reports-key }
groups:
  - { name: partners, members: ${partners} }
  - { name: keys-only, members: ${keysOnly} }
channel_rest:
  - { name: partners, url_path: /partners, service: whoami, security: partners }
  - { name: keys-only, url_path: /keys, service: whoami, security: keys-only }
  - { name: crm-direct, url_path: /crm, service: whoami, security: crm }
`;

describe('group channels', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ config: config('[crm, billing]'), services: WHOAMI });
  });
  afterAll(() => k?.close());

  const get = (url: string, headers: Record<string, string> = {}) => k.app.inject({ method: 'GET', url, headers });
  const CRM = { authorization: basic('crm', 'crm-pass') };
  const ERP = { authorization: basic('erp', 'erp-pass') };

  it('lets any member in, Basic Auth or API key, and tells the service through which group', async () => {
    const viaBasic = await get('/partners', CRM);
    expect(viaBasic.statusCode).toBe(200);
    expect(viaBasic.json()).toEqual({ user: { type: 'basic_auth', definition: 'crm', username: 'crm', group: 'partners' } });
    const viaKey = await get('/partners', { 'x-api-key': 'billing-key' });
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.json()).toEqual({ user: { type: 'apikey', definition: 'billing', username: 'billing', group: 'partners' } });
  });

  it.each<[string, Record<string, string>]>([
    ['no credentials', {}],
    ['a non-member’s valid Basic credentials', ERP],
    ['a non-member’s valid key', { 'x-api-key': 'reports-key' }],
    ['a member’s wrong password', { authorization: basic('crm', 'crm-pas') }],
    ['a member’s credentials and a member’s key at once', { ...CRM, 'x-api-key': 'billing-key' }],
    ['malformed Basic credentials next to a valid key', { authorization: 'Basic %%%', 'x-api-key': 'billing-key' }],
  ])('answers 401 for %s', async (_label, headers) => {
    expectUnauthorized(await get('/partners', headers), CHALLENGE);
  });

  it('looks only for the credential types its members have', async () => {
    const res = await get('/keys', { authorization: 'Bearer something-for-a-proxy', 'x-api-key': 'reports-key' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ user: { definition: 'reports', group: 'keys-only' } });
    expectUnauthorized(await get('/keys', CRM), undefined);
  });

  it('revokes a removed member at once and admits an added one, without touching the channel', async () => {
    expect((await get('/partners', CRM)).statusCode).toBe(200);
    expect(await k.writeConfig(config('[billing, erp]'))).toBe(true);
    expectUnauthorized(await get('/partners', CRM), CHALLENGE);
    expect((await get('/partners', ERP)).statusCode).toBe(200);
    expect((await get('/partners', { 'x-api-key': 'billing-key' })).statusCode).toBe(200);
    // The definition itself still works where it is named directly.
    expect((await get('/crm', CRM)).statusCode).toBe(200);

    expect(await k.writeConfig(config('[]'))).toBe(true);
    expectUnauthorized(await get('/partners', ERP), undefined);
    expectUnauthorized(await get('/partners', { 'x-api-key': 'billing-key' }), undefined);
  });
});
