import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import type { OutgoingAuthContext, OutgoingAuthFactory, OutgoingRequest } from '../../../../plugins/capabilities.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { TokenServer } from './token-server.ts';
import { refusedPort } from '../../../helpers/refused-port.ts';

const SECRET = 'cl1ent-S3CRET-value';
const OTHER_SECRET = 'rotated-S3CRET-value';
/** The 'slow' definition's token_timeout_ms. */
const TOKEN_TIMEOUT_MS = 200;

let auth: TokenServer;
let k: TestKernel;
let clock: ManualClock;
let logs: Array<Record<string, unknown>>;

function config(url: string, secret = SECRET, unreachable = 'http://127.0.0.1:9/token'): string {
  return `
security:
  - name: crm
    type: bearer_token
    username: app-1
    client_secret: "${secret}"
    auth_server_url: "${url}"
    scopes: "read\\nwrite"
  - name: erp
    type: bearer_token
    username: erp-client
    client_secret: "${secret}"
    auth_server_url: "${url}"
    client_id_field: appId
    client_secret_field: appKey
    grant_type: urn:erp:grant
    extra_fields: "audience=https://erp.example.com\\ntenant=42"
    data_format: json
  - name: slow
    type: bearer_token
    username: app-1
    client_secret: "${secret}"
    auth_server_url: "${url}"
    token_timeout_ms: ${TOKEN_TIMEOUT_MS}
  - name: nowhere
    type: bearer_token
    username: app-1
    client_secret: "${secret}"
    auth_server_url: "${unreachable}"
`;
}

beforeEach(async () => {
  auth = await TokenServer.start();
  clock = new ManualClock();
  logs = [];
  k = await startKernel({ config: config(auth.url), clock, logs });
});

afterEach(async () => {
  await k.close();
  await auth.close();
});

function factory(): OutgoingAuthFactory {
  const make = k.kernel.api.lookup('security.outgoing.bearer_token');
  if (make === undefined) throw new Error('bearer-token plugin provides no factory');
  return make;
}

function authorizer(name: string) {
  const entry = k.kernel.api.config().security.find((s) => s.name === name);
  if (entry === undefined) throw new Error(`no definition ${name}`);
  return factory()(entry);
}

function outgoing(): OutgoingRequest {
  return { method: 'GET', url: new URL('https://api.example.com/orders'), headers: {}, body: undefined };
}

function context(scopes?: string[], signal = new AbortController().signal): OutgoingAuthContext {
  return { cid: 'cid-test', scopes, signal };
}

async function authorized(name: string, scopes?: string[]): Promise<string | undefined> {
  const request = outgoing();
  await authorizer(name).authorize(request, context(scopes));
  return request.headers.authorization;
}

describe('bearer_token: getting and caching tokens', () => {
  it('50 concurrent calls make one token request and all get its token', async () => {
    auth.hold();
    const crm = authorizer('crm');
    const requests = Array.from({ length: 50 }, outgoing);
    const pending = requests.map((r) => crm.authorize(r, context()));
    await new Promise((r) => setTimeout(r, 50));
    auth.release();
    await Promise.all(pending);
    expect(auth.calls).toHaveLength(1);
    expect(new Set(requests.map((r) => r.headers.authorization))).toEqual(new Set(['Bearer tok-1']));
  });

  it('send a form token request by default: grant type, client id and secret, space-joined scopes, Accept JSON', async () => {
    await authorized('crm');
    expect(auth.calls[0]!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(auth.calls[0]!.headers.accept).toBe('application/json');
    expect(auth.calls[0]!.body).toEqual({ grant_type: 'client_credentials', client_id: 'app-1', client_secret: SECRET, scope: 'read write' });
  });

  it('send JSON with the custom field names, grant type and extra fields, and no scope when there are none', async () => {
    expect(await authorized('erp')).toBe('Bearer tok-1');
    expect(auth.calls[0]!.headers['content-type']).toBe('application/json');
    expect(auth.calls[0]!.body).toEqual({ grant_type: 'urn:erp:grant', appId: 'erp-client', appKey: SECRET, audience: 'https://erp.example.com', tenant: '42' });
  });

  it('keep a token for half its validity: expires_in 3600 is cached 1800 s', async () => {
    expect(await authorized('crm')).toBe('Bearer tok-1');
    clock.advance(1_800_000 - 1);
    expect(await authorized('crm')).toBe('Bearer tok-1');
    expect(auth.calls).toHaveLength(1);
    clock.advance(1);
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(auth.calls).toHaveLength(2);
  });

  it.each([
    ['absent (assumed 600 s)', undefined, 300_000],
    ['a numeric string', '120', 60_000],
  ])('read expires_in %s', async (_label, expiresIn, cachedMs) => {
    auth.reply = (_call, n) => ({ body: { access_token: `tok-${n}`, token_type: 'bearer', ...(expiresIn === undefined ? {} : { expires_in: expiresIn }) } });
    await authorized('crm');
    clock.advance(cachedMs - 1);
    expect(await authorized('crm')).toBe('Bearer tok-1');
    clock.advance(1);
    expect(await authorized('crm')).toBe('Bearer tok-2');
  });

  it('a wall clock set back keeps no token past its validity: the time that really passed counts too', async () => {
    auth.reply = (_call, n) => ({ body: { access_token: `tok-${n}`, token_type: 'bearer', expires_in: 1 } });
    expect(await authorized('crm')).toBe('Bearer tok-1');
    clock.set(clock.now() - 3_600_000);
    await new Promise((r) => setTimeout(r, 600));
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(await authorized('crm')).toBe('Bearer tok-2');
  });

  it('a wall clock set forward (or a machine resumed from suspend) fetches one new token, not one per call', async () => {
    expect(await authorized('crm')).toBe('Bearer tok-1');
    clock.advance(365 * 86_400_000);
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(auth.calls).toHaveLength(2);
  });

  it("use the call's scopes instead of the definition's, each scope set with a token of its own", async () => {
    expect(await authorized('crm')).toBe('Bearer tok-1');
    expect(await authorized('crm', ['admin', 'audit'])).toBe('Bearer tok-2');
    expect(auth.calls[1]!.body).toMatchObject({ scope: 'admin audit' });
    expect(await authorized('crm', ['audit', 'admin'])).toBe('Bearer tok-2');
    expect(await authorized('crm', [])).toBe('Bearer tok-3');
    expect(auth.calls[2]!.body).not.toHaveProperty('scope');
    expect(await authorized('crm')).toBe('Bearer tok-1');
    expect(auth.calls).toHaveLength(3);
  });

  it('refuse call scopes OAuth does not allow, before any token request', async () => {
    await expect(authorized('crm', ['a"b'])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(auth.calls).toHaveLength(0);
  });

  it('share tokens between authorizers of one definition, not between definitions', async () => {
    await authorized('crm');
    await authorized('crm');
    await authorized('erp');
    expect(auth.calls).toHaveLength(2);
  });

  it('after a 401 upstream (refused), drop the token and fetch a new one; a late refusal of the old token keeps the new', async () => {
    const crm = authorizer('crm');
    const first = outgoing();
    await crm.authorize(first, context());
    expect(await crm.refused!(first, context())).toBe(true);
    const second = outgoing();
    await crm.authorize(second, context());
    expect(second.headers.authorization).toBe('Bearer tok-2');
    expect(await crm.refused!(first, context())).toBe(true);
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(auth.calls).toHaveLength(2);
  });

  it('close() drops the definition’s tokens', async () => {
    await authorized('crm');
    await authorizer('crm').close!();
    expect(await authorized('crm')).toBe('Bearer tok-2');
  });

  it('an edited definition gets new tokens; reloading an unchanged one keeps them', async () => {
    expect(await authorized('crm')).toBe('Bearer tok-1');
    expect(await k.writeConfig(config(auth.url))).toBe(true);
    expect(await authorized('crm')).toBe('Bearer tok-1');
    expect(await k.writeConfig(config(auth.url, OTHER_SECRET))).toBe(true);
    expect(await authorized('crm')).toBe('Bearer tok-2');
    expect(auth.calls[1]!.body).toMatchObject({ client_secret: OTHER_SECRET });
  });

  it('a caller that gives up stops waiting; when every caller has, the token request is cancelled', async () => {
    auth.hold();
    const crm = authorizer('crm');
    const quitter = new AbortController();
    const patient = outgoing();
    const gaveUp = crm.authorize(outgoing(), context(undefined, quitter.signal));
    const waits = crm.authorize(patient, context());
    quitter.abort();
    await expect(gaveUp).rejects.toHaveProperty('name', 'AbortError');
    auth.release();
    await waits;
    expect(patient.headers.authorization).toBe('Bearer tok-1');

    const answer = auth.reply;
    auth.reply = (call, n) => (n === 2 ? 'hang' : answer(call, n));
    const alone = new AbortController();
    const lone = authorizer('erp').authorize(outgoing(), context(undefined, alone.signal));
    await until(() => auth.calls.length === 2);
    alone.abort();
    // Arrives while the abandoned request is still being cancelled: it gets a request of its own.
    const next = authorized('erp');
    await expect(lone).rejects.toHaveProperty('name', 'AbortError');
    expect(await next).toBe('Bearer tok-3');
    await until(() => auth.abandoned === 1);
  });
});

describe('bearer_token: failed token requests', () => {
  const TOKEN = 'leaked-TOKEN-abc123';

  async function failure(name: string): Promise<SvcError> {
    const err = await Promise.resolve(authorizer(name).authorize(outgoing(), context())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SvcError);
    return err as SvcError;
  }

  function expectNoSecretAnywhere(err: SvcError): void {
    for (const text of [err.message, err.details, JSON.stringify(logs)]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(TOKEN);
    }
  }

  function warnings(): Array<Record<string, unknown>> {
    return logs.filter((l) => l.msg === 'bearer token request failed');
  }

  it.each([
    ['an HTTP 500', { status: 500, body: { error: 'server_error', error_description: `bad ${SECRET}`, access_token: TOKEN } }, /auth server answered HTTP 500 \(server_error\)/],
    ['an HTTP 401 with a non-JSON body', { status: 401, body: `client_secret=${SECRET}` }, /auth server answered HTTP 401$/],
    ['a body that is not JSON', { body: `access_token=${TOKEN}&client_secret=${SECRET}` }, /token response is not a JSON object/],
    ['no access_token', { body: { token_type: 'Bearer', refresh_token: TOKEN, expires_in: 60 } }, /token response has no access_token/],
    ['an access_token a header cannot carry', { body: { access_token: `${TOKEN}\r\nx-injected: 1`, token_type: 'Bearer' } }, /access_token has characters a header cannot carry/],
    ['another token type', { body: { access_token: TOKEN, token_type: 'mac' } }, /token_type is not Bearer/],
  ])('%s is a 502 without the secret or a token, logged once', async (_label, reply, message) => {
    auth.reply = () => reply;
    const err = await failure('crm');
    expect(err.code).toBe('BAD_GATEWAY');
    expect(err.status).toBe(502);
    expect(err.details).toMatch(/^Token request of bearer_token definition 'crm' failed: /);
    expect(err.details).toMatch(message);
    expectNoSecretAnywhere(err);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ security: 'crm', cid: 'cid-test', level: 40 });
  });

  it('an unreachable auth server is a 502', async () => {
    const closed = await refusedPort();
    await k.writeConfig(config(auth.url, SECRET, `http://127.0.0.1:${closed}/token`));
    const err = await failure('nowhere');
    expect(err.code).toBe('BAD_GATEWAY');
    expect(err.details).toMatch(/auth server unreachable \(ECONNREFUSED\)/);
    expectNoSecretAnywhere(err);
    expect(warnings()).toHaveLength(1);
  });

  it('an auth server that does not answer within token_timeout_ms is a 502', async () => {
    auth.reply = () => 'hang';
    const started = Date.now();
    const err = await failure('slow');
    // The deadline is the claim: not before token_timeout_ms, and by it with ten times its length
    // to spare for a loaded machine (a hanging auth server would otherwise hold the call for good).
    const ms = Date.now() - started;
    expect(ms).toBeGreaterThanOrEqual(TOKEN_TIMEOUT_MS);
    expect(ms).toBeLessThan(TOKEN_TIMEOUT_MS * 10);
    expect(err.details).toMatch(new RegExp(`no answer within ${TOKEN_TIMEOUT_MS} ms`));
    expectNoSecretAnywhere(err);
  });

  it('fails every caller waiting for it, is not cached, and the next call tries again', async () => {
    auth.hold();
    auth.reply = (_call, n) => (n === 1 ? { status: 503, body: { error: 'temporarily_unavailable' } } : { body: { access_token: `tok-${n}`, expires_in: 3600 } });
    const crm = authorizer('crm');
    const pending = Array.from({ length: 10 }, () => Promise.resolve(crm.authorize(outgoing(), context())).then(() => undefined, (e: unknown) => e));
    await new Promise((r) => setTimeout(r, 30));
    auth.release();
    const errors = await Promise.all(pending);
    expect(errors.every((e) => e instanceof SvcError && e.code === 'BAD_GATEWAY')).toBe(true);
    expect(auth.calls).toHaveLength(1);
    expect(warnings()).toHaveLength(1);
    expect(await authorized('crm')).toBe('Bearer tok-2');
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

