import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { TokenServer } from '../../security/bearer-token/token-server.ts';
import { json, Upstream } from './upstream.ts';

/**
 * A service calls a token-protected API (docs/outgoing.md): svc gets the token from a real token
 * endpoint once for many concurrent calls, adds it on the host side, refreshes it once on a 401,
 * and requests other scopes when the call asks for them.
 */
const SECRET = 'client-secret-of-svc-0123';
const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ async POST(ctx) {
  const r = await outgoing('api').get(ctx.cid, { params: { id: 1 }, auth_scopes: ctx.payload.scopes });
  return { status: r.status, data: r.data };
} });
`;

/** Calls through a connection whose auth server never answers, with a time limit far below token_timeout_ms (10 s). */
const IMPATIENT = `import { service, outgoing } from 'svc/sdk';
export default service({ limits: { timeoutMs: 700 }, async POST(ctx) {
  try { await outgoing('stuck-api').get(ctx.cid, { params: { id: 1 } }); return 'answered'; }
  catch (e) { return { kind: e.kind ?? e.name, status: e.status, message: e.message }; }
} });
`;

let tokens: TokenServer;
let stuck: TokenServer;
const api = new Upstream();
let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];
/** Tokens the API accepts right now; emptied to make it answer 401 once. */
const valid = new Set<string>();

beforeAll(async () => {
  tokens = await TokenServer.start();
  stuck = await TokenServer.start();
  stuck.reply = () => 'hang';
  await api
    .route('/things/', (req, res) => {
      const token = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
      if (!valid.has(token)) return json(res, 401, { error: 'invalid_token' });
      json(res, 200, { token });
    })
    .start();
  tokens.reply = (call, n) => {
    valid.add(`tok-${n}`);
    return { body: { access_token: `tok-${n}`, token_type: 'Bearer', expires_in: 3600, scope: call.body.scope } };
  };
  k = await startKernel({
    config: `
security:
  - { name: api-oauth, type: bearer_token, username: svc-client, client_secret: "\${API_SECRET}", auth_server_url: "${tokens.url}", scopes: "things.read" }
  - { name: stuck-oauth, type: bearer_token, username: svc-client, client_secret: "\${API_SECRET}", auth_server_url: "${stuck.url}" }
channel_rest:
  - { name: c, url_path: /c, service: caller, security: none }
  - { name: i, url_path: /i, service: impatient, security: none }
outgoing_rest:
  - { name: api, address: "http://127.0.0.1:${api.port}", url_path: "/things/{id}", security: api-oauth }
  - { name: stuck-api, address: "http://127.0.0.1:${api.port}", url_path: "/things/{id}", security: stuck-oauth }
`,
    env: { API_SECRET: SECRET },
    services: { 'caller.ts': CALLER, 'impatient.ts': IMPATIENT },
    logs,
  });
});
afterAll(async () => {
  await k?.close();
  await api.close();
  await tokens?.close();
  await stuck?.close();
});

const call = async (scopes?: string) => (await k.app.inject({ method: 'POST', url: '/c', payload: scopes === undefined ? {} : { scopes } })).json();

describe('an outgoing connection with a Bearer token definition', () => {
  it('makes one token request for 20 concurrent calls and sends the token with each', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => call()));
    expect(results).toEqual(Array.from({ length: 20 }, () => ({ status: 200, data: { token: 'tok-1' } })));
    expect(tokens.calls).toHaveLength(1);
    expect(tokens.calls[0]!.body).toMatchObject({ grant_type: 'client_credentials', client_id: 'svc-client', client_secret: SECRET, scope: 'things.read' });
  });

  it('refreshes the token once when the API answers 401', async () => {
    valid.clear();
    expect(await call()).toEqual({ status: 200, data: { token: 'tok-2' } });
    expect(tokens.calls).toHaveLength(2);
  });

  it('requests the scopes a call asks for, apart from the definition’s', async () => {
    expect(await call('things.write things.read')).toEqual({ status: 200, data: { token: 'tok-3' } });
    expect(tokens.calls[2]!.body.scope).toBe('things.write things.read');
    expect(await call('')).toEqual({ status: 200, data: { token: 'tok-2' } });
  });

  it("stops waiting for a token before the calling service's time limit: the service catches GatewayTimeout", async () => {
    // Waiting out token_timeout_ms (10 s) ended the call with SERVICE_TIMEOUT.
    const res = await k.app.inject({ method: 'POST', url: '/i' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ kind: 'GatewayTimeout', status: 504, message: expect.stringMatching(/^No bearer token within the \d+ ms the call had left to wait$/) });
    expect(stuck.calls).toHaveLength(1);
  });

  it('never logs the client secret or a token', () => {
    expect(JSON.stringify(logs)).not.toMatch(/client-secret-of-svc|tok-\d/);
  });
});
