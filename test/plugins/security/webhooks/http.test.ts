import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/**
 * The GitHub and Stripe samples on synchronous channels (Use queue off), where the signature
 * checks are answered directly: 401 with the reason. They ship on queued channels
 * (github.test.ts, stripe.test.ts); the same code serves both.
 */

/** The sample services exactly as shipped in services/; their secrets are the named secrets of the config. */
function sample(name: string, secret: string): { code: string; secret: string } {
  return { code: readFileSync(new URL(`../../../../services/${name}.ts`, import.meta.url), 'utf8'), secret };
}

const github = sample('webhook-github', 'gh-webhook-secret-2f8e1d');
const stripe = sample('webhook-stripe', 'whsec_9c41b7d2e0aa');
const hmacHex = (key: string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest('hex');

const CHANNELS = `
channel_rest:
  - { name: github, url_path: /webhooks/github, service: webhook-github, method: POST, data_format: json, security: none }
  - { name: stripe, url_path: /webhooks/stripe, service: webhook-stripe, method: POST, data_format: json, security: none }
`;
const CONFIG = `
secrets:
  - { name: github-webhook, value: "\${GITHUB_WEBHOOK_SECRET}", services: [webhook-github] }
  - { name: stripe-webhook, value: "\${STRIPE_WEBHOOK_SECRET}", services: [webhook-stripe] }
${CHANNELS}`;
const SERVICES = { 'webhook-github.ts': github.code, 'webhook-stripe.ts': stripe.code };

const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES, env: { GITHUB_WEBHOOK_SECRET: github.secret, STRIPE_WEBHOOK_SECRET: stripe.secret }, logs });
});
afterAll(() => k?.close());

const post = (url: string, body: string, headers: Record<string, string>) =>
  k.app.inject({ method: 'POST', url, payload: body, headers: { 'content-type': 'application/json', ...headers } });

function expectRejected(res: Awaited<ReturnType<typeof post>>, details: string): void {
  expect(res.statusCode).toBe(401);
  expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details });
}

describe('GitHub-style webhook (X-Hub-Signature-256)', () => {
  const body = JSON.stringify({ ref: 'refs/heads/main', after: 'abc123', pusher: { name: 'zoë' } });
  const signed = (b: string, key = github.secret) => ({ 'x-hub-signature-256': `sha256=${hmacHex(key, b)}`, 'x-github-event': 'push' });

  it('accepts a delivery signed with the secret', async () => {
    const res = await post('/webhooks/github', body, signed(body));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: 'push' });
  });

  it.each<[string, () => Record<string, string>, string]>([
    ['no signature header', () => ({ 'x-github-event': 'push' }), 'Missing signature'],
    ['another algorithm prefix', () => ({ 'x-hub-signature-256': `sha1=${hmacHex(github.secret, body)}` }), 'Missing signature'],
    ['a tampered body', () => signed(body), 'Invalid signature'],
    ['another secret', () => signed(body, 'not-the-secret'), 'Invalid signature'],
    ['a truncated signature', () => ({ 'x-hub-signature-256': `sha256=${hmacHex(github.secret, body).slice(0, 40)}` }), 'Invalid signature'],
    ['a signature that is not hex', () => ({ 'x-hub-signature-256': 'sha256=zz' }), 'Invalid signature'],
  ])('answers 401 for %s', async (label, headers, details) => {
    const sent = label === 'a tampered body' ? body.replace('main', 'evil') : body;
    expectRejected(await post('/webhooks/github', sent, headers()), details);
  });
});

describe('Stripe-style webhook (t=..., v1=...)', () => {
  const body = JSON.stringify({ id: 'evt_1', type: 'payment_intent.succeeded', data: { object: { amount: 2000 } } });
  const now = () => Math.floor(Date.now() / 1000);
  const header = (t: number, b = body, key = stripe.secret) => `t=${t},v1=${hmacHex(key, `${t}.${b}`)}`;
  const send = (sig: string, b = body) => post('/webhooks/stripe', b, { 'stripe-signature': sig });

  it('accepts a fresh event signed with the secret', async () => {
    const res = await send(header(now()));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ received: 'payment_intent.succeeded' });
  });

  it('accepts any of several v1 signatures (secret roll) and an event just inside the tolerance', async () => {
    const t = now();
    expect((await send(`t=${t},v1=${hmacHex('old-secret', `${t}.${body}`)},${header(t).split(',')[1]}`)).statusCode).toBe(200);
    expect((await send(header(now() - 290))).statusCode).toBe(200);
  });

  it.each<[string, () => string, string]>([
    // 30 s past the 300 s tolerance: a second that ticks between signing and checking must not let one through.
    ['a stale timestamp (replay)', () => header(now() - 330), 'Signature timestamp outside the tolerance'],
    ['a timestamp far in the future', () => header(now() + 330), 'Signature timestamp outside the tolerance'],
    ['another secret', () => header(now(), body, 'whsec_other'), 'Invalid signature'],
    ['a signature over another body', () => header(now(), body.replace('2000', '1')), 'Invalid signature'],
    ['a timestamp other than the signed one', () => header(now()).replace(/^t=(\d+)/, (_m, t: string) => `t=${Number(t) - 1}`), 'Invalid signature'],
    ['no v1 signature', () => `t=${now()},v0=${hmacHex(stripe.secret, `${now()}.${body}`)}`, 'Missing signature'],
    ['no timestamp', () => `v1=${hmacHex(stripe.secret, body)}`, 'Missing signature'],
    ['a malformed header', () => 'garbage', 'Missing signature'],
  ])('answers 401 for %s', async (_label, sig, details) => {
    expectRejected(await send(sig()), details);
  });

  it('answers 401 when the header is missing', async () => {
    expectRejected(await post('/webhooks/stripe', body, {}), 'Missing signature');
  });
});

describe('the samples and their named secrets', () => {
  it('never write the secrets to the log', () => {
    expect(logs.length).toBeGreaterThan(0);
    const text = logs.map((l) => JSON.stringify(l)).join('\n');
    expect(text).not.toContain(github.secret);
    expect(text).not.toContain(stripe.secret);
  });

  it('answer 503 until the secret has a value (the sender retries), and 403 when it is not granted to them', async () => {
    const unset = await startKernel({ config: `\nsecrets:\n  - { name: github-webhook, services: [webhook-github] }\n  - { name: stripe-webhook, value: x }\n${CHANNELS}`, services: SERVICES });
    try {
      const body = '{"zen":"hi"}';
      const gh = await unset.app.inject({ method: 'POST', url: '/webhooks/github', payload: body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${hmacHex('x', body)}` } });
      expect(gh.statusCode).toBe(503);
      expect(gh.json()).toMatchObject({ details: "Secret 'github-webhook' has no value yet" });
      const t = Math.floor(Date.now() / 1000);
      const st = await unset.app.inject({ method: 'POST', url: '/webhooks/stripe', payload: body, headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${hmacHex('x', `${t}.${body}`)}` } });
      expect(st.statusCode).toBe(403);
      expect(st.json()).toMatchObject({ details: "Secret 'stripe-webhook' is not granted to service 'webhook-stripe'" });
    } finally {
      await unset.close();
    }
  });
});
