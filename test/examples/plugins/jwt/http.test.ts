import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { exampleDir, expectUnauthorized } from '../../support.ts';

/**
 * The jwt example loaded from config by its path, as a user names a plugin file
 * (`plugins: { jwt: { module: /abs/path/plugin.ts } }`). Every 401 here also proves the plugin
 * got the kernel's own SDK: a SvcError from another copy would not be recognised and answer 500.
 */
const HS_SECRET = 'a-shared-secret-of-at-least-32-chars!';
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const clock = new ManualClock(NOW);
const nowS = NOW / 1000;

const WHOAMI = {
  'whoami.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ user: ctx.user ?? null, authorization: ctx.headers.authorization ?? null }) });\n`,
};

let rsKey: CryptoKey;
let otherRsKey: CryptoKey;

function configOf(dir: string): string {
  return `
plugins:
  jwt: { module: ${JSON.stringify(join(exampleDir('jwt'), 'plugin.ts'))} }
security:
  - { name: partners, type: jwt, algorithms: [HS256], secret: "\${JWT_SECRET}", issuer: https://idp.example, audience: orders-api }
  - { name: staff, type: jwt, algorithms: [RS256], jwks_file: ${JSON.stringify(join(dir, 'jwks.json'))}, clock_tolerance_s: 30 }
channel_rest:
  - { name: partners, url_path: /partners, service: whoami, security: partners }
  - { name: staff, url_path: /staff, service: whoami, security: staff }
`;
}

const hs = (claims: JWTPayload, secret = HS_SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret));
const rs = (claims: JWTPayload, key = rsKey, kid = 'k1') => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
const partner = (extra: JWTPayload = {}): JWTPayload => ({ sub: 'acme', iss: 'https://idp.example', aud: 'orders-api', iat: nowS, exp: nowS + 300, ...extra });

describe('jwt example plugin, loaded by path', () => {
  let k: TestKernel;
  let dir: string;
  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    rsKey = pair.privateKey;
    otherRsKey = (await generateKeyPair('RS256')).privateKey;
    dir = mkdtempSync(join(tmpdir(), 'svc-jwks-'));
    writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }));
    k = await startKernel({ config: configOf(dir), services: WHOAMI, env: { JWT_SECRET: HS_SECRET }, clock });
  });
  afterAll(async () => {
    await k?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (url: string, token?: string, headers: Record<string, string | string[]> = {}) =>
    k.app.inject({ method: 'GET', url, headers: token === undefined ? headers : { authorization: `Bearer ${token}`, ...headers } });

  it('HS256: the token’s sub is the user the service sees, and the token is hidden from it', async () => {
    const res = await get('/partners', await hs(partner()));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ user: { type: 'jwt', definition: 'partners', username: 'acme' }, authorization: null });
  });

  it('RS256 with a key from the JWKS file, chosen by kid', async () => {
    const res = await get('/staff', await rs({ sub: 'alice', exp: nowS + 60 }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ user: { type: 'jwt', definition: 'staff', username: 'alice' }, authorization: null });
  });

  it('accepts the Bearer scheme in any case', async () => {
    const res = await get('/partners', undefined, { authorization: `bearer ${await hs(partner())}` });
    expect(res.statusCode).toBe(200);
  });

  it('no Authorization header: 401 with a bare Bearer challenge', async () => {
    expectUnauthorized(await get('/partners'), 'Bearer realm="svc"');
  });

  it.each<[string, () => Promise<string>]>([
    ['an expired token', () => hs(partner({ exp: nowS - 1 }))],
    ['a token not valid yet', () => hs(partner({ nbf: nowS + 60 }))],
    ['the wrong audience', () => hs(partner({ aud: 'billing-api' }))],
    ['no audience', () => hs(partner({ aud: undefined }))],
    ['the wrong issuer', () => hs(partner({ iss: 'https://evil.example' }))],
    ['a wrong signature (another secret)', () => hs(partner(), 'another-secret-of-at-least-32-chars!!')],
    ['a tampered payload', async () => {
      const [h, , s] = (await hs(partner())).split('.');
      return `${h}.${Buffer.from(JSON.stringify(partner({ sub: 'root' }))).toString('base64url')}.${s}`;
    }],
    ['alg none', async () => new UnsecuredJWT(partner()).encode()],
    ['an RS256 token on an HS256-only definition', () => rs(partner())],
    ['no sub', () => hs(partner({ sub: undefined }))],
    ['garbage', async () => 'not-a-jwt'],
  ])('HS256 definition: 401 for %s', async (_label, token) => {
    expectUnauthorized(await get('/partners', await token()), 'Bearer realm="svc", error="invalid_token"');
  });

  it.each<[string, () => Promise<string>]>([
    ['a key not in the JWKS (same kid)', () => rs({ sub: 'alice', exp: nowS + 60 }, otherRsKey)],
    ['an unknown kid', () => rs({ sub: 'alice', exp: nowS + 60 }, rsKey, 'k2')],
    ['an HS256 token (the JWKS holds no secret)', () => hs({ sub: 'alice', exp: nowS + 60 })],
    ['a token expired past the tolerance', () => rs({ sub: 'alice', exp: nowS - 31 })],
    ['a token valid only past the tolerance', () => rs({ sub: 'alice', nbf: nowS + 31, exp: nowS + 600 })],
  ])('RS256 definition: 401 for %s', async (_label, token) => {
    expectUnauthorized(await get('/staff', await token()), 'Bearer realm="svc", error="invalid_token"');
  });

  it('clock_tolerance_s lets a token just expired or just not yet valid in', async () => {
    expect((await get('/staff', await rs({ sub: 'alice', exp: nowS - 29 }))).statusCode).toBe(200);
    expect((await get('/staff', await rs({ sub: 'alice', nbf: nowS + 29, exp: nowS + 600 }))).statusCode).toBe(200);
  });

  it('follows the kernel clock: a token expires when the clock passes exp', async () => {
    const token = await hs(partner({ exp: nowS + 10 }));
    expect((await get('/partners', token)).statusCode).toBe(200);
    clock.advance(11_000);
    try {
      expectUnauthorized(await get('/partners', token), 'Bearer realm="svc", error="invalid_token"');
    } finally {
      clock.set(NOW);
    }
  });

  it.each<[string, Record<string, string | string[]>]>([
    ['Basic credentials', { authorization: 'Basic YWNtZTpzZWNyZXQ=' }],
    ['a Bearer scheme without a token', { authorization: 'Bearer ' }],
    ['two Authorization headers', { authorization: ['Bearer a.b.c', 'Bearer a.b.c'] }],
  ])('401 for %s', async (_label, headers) => {
    expectUnauthorized(await get('/partners', undefined, headers), 'Bearer realm="svc", error="invalid_token"');
  });
});
