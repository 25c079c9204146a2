import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { rows, until } from '../../delivery/use-queue/support.ts';
import { logLine, messagesOf, nowSeconds, post, sampleCode, slackHeaders, type LogLine } from './support.ts';

/** services/webhook-slack.ts and services/slack-event.ts as shipped: a synchronous channel that hands its work to the queue. */

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';

const CONFIG = `
plugins:
  use-queue: { config: { stop_wait_ms: 0 } }
secrets:
  - { name: slack-signing, value: "${SECRET}", services: [webhook-slack] }
channel_rest:
  - { name: slack, url_path: /webhooks/slack, service: webhook-slack, method: POST, data_format: json, security: none }
`;

const logs: LogLine[] = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'webhook-slack.ts': sampleCode('webhook-slack'), 'slack-event.ts': sampleCode('slack-event') }, logs });
});
afterAll(() => k?.close());

const send = (body: string, headers = slackHeaders(SECRET, body)) => post(k, '/webhooks/slack', body, headers);
const callback = (eventId: string, event: Record<string, unknown>) =>
  JSON.stringify({ token: 'x', team_id: 'T1', api_app_id: 'A1', type: 'event_callback', event_id: eventId, event_time: 1700000000, event });

describe('Slack Events API (Use queue off)', () => {
  it('answers url_verification synchronously with its challenge', async () => {
    const body = JSON.stringify({ token: 'x', challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P', type: 'url_verification' });
    const res = await send(body);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P' });
    expect(await rows(k)).toEqual([]);
  });

  it('answers an event_callback 200 at once and slack-event acts on event.type from the background queue', async () => {
    const res = await send(callback('Ev01', { type: 'app_mention', user: 'U1', channel: 'C1', text: '<@U0> deploy?' }));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ ok: true });
    const queued = await logLine(logs, 'webhook-slack', /^Slack event Ev01 queued as /);
    expect(queued.cid).toBe(res.headers['x-svc-cid']);
    const handled = await logLine(logs, 'slack-event', /^Slack app_mention/);
    expect(handled.msg).toBe('Slack app_mention by U1 in C1: <@U0> deploy? (event Ev01, team T1)');
    await until(k, (r) => r.length === 0);
  });

  it("passes Slack's retry number on, and logs and accepts event types it does not handle", async () => {
    const body = callback('Ev02', { type: 'message', channel: 'C2', text: 'hi' });
    expect((await send(body, { ...slackHeaders(SECRET, body), 'x-slack-retry-num': '1', 'x-slack-retry-reason': 'http_timeout' })).statusCode).toBe(200);
    expect((await send(callback('Ev03', { type: 'reaction_added', user: 'U1' }))).statusCode).toBe(200);
    await logLine(logs, 'slack-event', /^Slack message/);
    await logLine(logs, 'slack-event', /^Slack event reaction_added/);
    expect(messagesOf(logs, 'slack-event')).toEqual(expect.arrayContaining(['Slack message in C2 (event Ev02, team T1, Slack retry 1)', 'Slack event reaction_added ignored (event Ev03)']));
  });

  it.each<[string, (body: string) => Record<string, string>, string]>([
    ['another secret', (body) => slackHeaders('not-the-secret', body), 'Invalid signature'],
    ['a timestamp other than the signed one', (body) => ({ ...slackHeaders(SECRET, body), 'x-slack-request-timestamp': String(nowSeconds() - 1) }), 'Invalid signature'],
    ['a stale timestamp (replay)', (body) => slackHeaders(SECRET, body, nowSeconds() - 301), 'Signature timestamp outside the tolerance'],
    ['no timestamp', (body) => ({ 'x-slack-signature': slackHeaders(SECRET, body)['x-slack-signature']! }), 'Missing signature'],
    ['another signature version', (body) => ({ ...slackHeaders(SECRET, body), 'x-slack-signature': `v1=${'0'.repeat(64)}` }), 'Missing signature'],
  ])('answers 401 synchronously for %s and queues nothing', async (_label, headers, details) => {
    const body = callback('Ev-bad', { type: 'app_mention', user: 'U9', channel: 'C9', text: 'evil' });
    const res = await send(body, headers(body));
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details });
    expect(await rows(k)).toEqual([]);
    expect(messagesOf(logs, 'slack-event').join('\n')).not.toContain('Ev-bad');
  });

  it('never writes the signing secret to the log', () => {
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.map((l) => JSON.stringify(l)).join('\n')).not.toContain(SECRET);
  });
});
