import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { control, errorsOf, rows, until } from '../../delivery/use-queue/support.ts';
import { githubSignature, logLine, messagesOf, post, sampleCode, type LogLine } from './support.ts';

/** services/webhook-github.ts as shipped, on queued channels: JSON and form-encoded deliveries. */

const SECRET = 'gh-webhook-secret-2f8e1d';
const FORM = 'application/x-www-form-urlencoded';

const config = (secretValue: string | null, delivery = '{}') => `
plugins:
  use-queue: { config: { stop_wait_ms: 0 } }
secrets:
  - { name: github-webhook, ${secretValue === null ? '' : `value: "${secretValue}", `}services: [webhook-github] }
channel_rest:
  - { name: github, url_path: /webhooks/github, service: webhook-github, method: POST, data_format: json, security: none, use_queue: true, delivery: ${delivery} }
  - { name: github-form, url_path: /webhooks/github-form, service: webhook-github, method: POST, data_format: form, security: none, use_queue: true }
`;

let k: TestKernel;
let logs: LogLine[];
afterEach(async () => k?.close());

async function start(secretValue: string | null = SECRET, delivery?: string): Promise<void> {
  logs = [];
  k = await startKernel({ config: config(secretValue, delivery), services: { 'webhook-github.ts': sampleCode('webhook-github') }, logs });
}

const deliver = (event: string, body: string, opts: { key?: string; guid?: string; url?: string; contentType?: string } = {}) =>
  post(k, opts.url ?? '/webhooks/github', body, {
    'x-github-event': event,
    'x-github-delivery': opts.guid ?? '72d3162e-cc78-11e3-81ab-4c9367dc0958',
    'x-hub-signature-256': githubSignature(opts.key ?? SECRET, body),
  }, opts.contentType);

const push = JSON.stringify({ ref: 'refs/heads/main', after: 'abc123', commits: [{ id: 'a' }, { id: 'b' }], repository: { full_name: 'octo/app' } });

describe('GitHub webhook from the queue', () => {
  it('answers 200 {cid} on arrival, then verifies and dispatches the push under an attempt CID of its own', async () => {
    await start();
    const res = await deliver('push', push);
    expect(res.statusCode).toBe(200);
    const cid = res.headers['x-svc-cid'];
    expect(res.json()).toEqual({ cid });
    const line = await logLine(logs, 'webhook-github', /^GitHub push/);
    expect(line.msg).toBe('GitHub push to octo/app refs/heads/main at abc123, 2 commit(s) (delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958)');
    expect(line.cid).not.toBe(cid);
    await until(k, (r) => r.length === 0);
  });

  it('acts on X-GitHub-Event: ping, pull_request and issues, and logs and accepts an event it does not handle', async () => {
    await start();
    const repository = { full_name: 'octo/app' };
    const sent: Array<[string, unknown]> = [
      ['ping', { zen: 'Design for failure.', hook_id: 1 }],
      ['pull_request', { action: 'opened', pull_request: { number: 42, title: 'Fix' }, repository }],
      ['issues', { action: 'closed', issue: { number: 7, title: 'Bug' }, repository }],
      ['star', { action: 'created', repository }],
    ];
    for (const [event, body] of sent) expect((await deliver(event, JSON.stringify(body), { guid: `g-${event}` })).statusCode).toBe(200);
    await until(k, (r) => r.length === 0);
    expect(messagesOf(logs, 'webhook-github').sort()).toEqual([
      'GitHub event star ignored (delivery g-star)',
      'GitHub issue #7 closed in octo/app (delivery g-issues)',
      'GitHub ping (delivery g-ping): Design for failure.',
      'GitHub pull request #42 opened in octo/app (delivery g-pull_request)',
    ]);
  });

  it.each<[string, () => ReturnType<typeof deliver>, string]>([
    ['a signature made with another secret', () => deliver('push', push, { key: 'not-the-secret' }), 'Invalid signature'],
    ['a tampered body', () => post(k, '/webhooks/github', push.replace('main', 'evil'), { 'x-github-event': 'push', 'x-hub-signature-256': githubSignature(SECRET, push) }), 'Invalid signature'],
    ['no signature', () => post(k, '/webhooks/github', push, { 'x-github-event': 'push' }), 'Missing signature'],
  ])('dead-letters %s after exactly one attempt, and the operator can delete it', async (_label, send, message) => {
    await start();
    const res = await send();
    // The sender cannot be told: the answer was given before the service ran.
    expect(res.statusCode).toBe(200);
    const [dead] = await until(k, (r) => r[0]?.state === 'dead');
    expect(dead).toMatchObject({ channel: 'github', cid: res.json().cid, attempts: 1 });
    expect(errorsOf(dead!)).toEqual([expect.objectContaining({ attempt: 1, kind: 'Unauthorized', message })]);
    expect(messagesOf(logs, 'webhook-github')).toEqual([]);
    const listed = (await control(k, 'queue.list', { channel: 'github', state: 'dead' })) as Array<{ id: number; lastError: { message: string } }>;
    expect(listed.map((e) => e.lastError.message)).toEqual([message]);
    expect(await control(k, 'queue.delete', { error: message })).toMatchObject({ deleted: 1 });
    expect(await rows(k)).toEqual([]);
  });

  it('retries a delivery that failed for a passing reason; the retry sees ctx.delivery and keeps the delivery GUID', async () => {
    // No secret yet: the service fails with ServiceUnavailable, which is retried.
    await start(null, '{ base_delay_ms: 300, jitter: false }');
    const res = await deliver('push', push, { guid: 'guid-retry' });
    expect(res.statusCode).toBe(200);
    const [waiting] = await until(k, (r) => r[0]?.state === 'pending' && r[0].attempts === 1);
    expect(errorsOf(waiting!)[0]).toMatchObject({ kind: 'ServiceUnavailable', message: "Secret 'github-webhook' has no value yet" });
    await control(k, 'secrets.set', { name: 'github-webhook', value: SECRET, configValue: null });
    await until(k, (r) => r.length === 0);
    const retry = await logLine(logs, 'webhook-github', /^GitHub delivery guid-retry: attempt/);
    expect(retry.msg).toMatch(/^GitHub delivery guid-retry: attempt [2-5], first received \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect((await logLine(logs, 'webhook-github', /^GitHub push/)).msg).toContain('(delivery guid-retry)');
  });
});

describe("GitHub's form-encoded delivery (data_format: form)", () => {
  const event = { action: 'synchronize', pull_request: { number: 9, title: 'Zoë & "quotes" + more' }, repository: { full_name: 'octo/app' } };
  const formBody = `payload=${encodeURIComponent(JSON.stringify(event))}`;

  it('verifies the signature over the raw form body and dispatches the JSON of its payload field', async () => {
    await start();
    const res = await deliver('pull_request', formBody, { url: '/webhooks/github-form', contentType: FORM });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ cid: res.headers['x-svc-cid'] });
    expect((await logLine(logs, 'webhook-github', /^GitHub pull request/)).msg).toBe('GitHub pull request #9 synchronize in octo/app (delivery 72d3162e-cc78-11e3-81ab-4c9367dc0958)');
    await until(k, (r) => r.length === 0);
  });

  it('dead-letters a form body signed as another body, and one without a payload field', async () => {
    await start();
    // Signed over the JSON, sent as a form: what arrived is not what was signed.
    await post(k, '/webhooks/github-form', formBody, { 'x-github-event': 'pull_request', 'x-hub-signature-256': githubSignature(SECRET, JSON.stringify(event)) }, FORM);
    await deliver('pull_request', `other=${encodeURIComponent(JSON.stringify(event))}`, { url: '/webhooks/github-form', contentType: FORM });
    const dead = await until(k, (r) => r.length === 2 && r.every((e) => e.state === 'dead'));
    expect(dead.map((e) => [e.attempts, errorsOf(e).map((x) => `${x.kind}: ${x.message}`)])).toEqual([
      [1, ['Unauthorized: Invalid signature']],
      [1, ['BadRequest: Form delivery without a payload field']],
    ]);
    expect(messagesOf(logs, 'webhook-github')).toEqual([]);
  });
});
