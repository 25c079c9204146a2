import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { isServiceFile } from '../../../../kernel/services/registry.ts';
import { control, until } from '../../delivery/use-queue/support.ts';
import { githubSignature, logLine, nowSeconds, post, sampleCode, slackHeaders, stripeSignature, type LogLine } from './support.ts';

/**
 * config/svc.yaml with every file of services/, as `npm start` serves them (the server section
 * aside: tests use a temp directory): each sender's channel reaches its service, and each
 * service may use the secret the config lists for it.
 */

const shippedConfig = (): string => {
  const doc = parse(readFileSync(new URL('../../../../config/svc.yaml', import.meta.url), 'utf8')) as Record<string, unknown>;
  delete doc.server;
  return stringify(doc);
};
const shippedServices = (): Record<string, string> => {
  const files = readdirSync(new URL('../../../../services/', import.meta.url)).filter((f) => isServiceFile(f));
  return Object.fromEntries(files.map((f) => [f, sampleCode(f.replace(/\.ts$/, ''))]));
};

const SECRETS = { 'github-webhook': 'gh-shipped-1', 'stripe-webhook': 'whsec_shipped_2', 'slack-signing': 'slack-shipped-3' };
const logs: LogLine[] = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: shippedConfig(), services: shippedServices(), logs });
  for (const [name, value] of Object.entries(SECRETS)) await control(k, 'secrets.set', { name, value, configValue: null });
});
afterAll(() => k?.close());

describe('the shipped webhook samples', () => {
  it('deploy every service without an error', () => {
    expect(k.kernel.services.names().sort()).toEqual(Object.keys(shippedServices()).map((f) => f.replace(/\.ts$/, '')).sort());
    expect(logs.filter((l) => Number(l.level) >= 50)).toEqual([]);
  });

  it('receive a signed event on each channel and process it with the secret the config grants', async () => {
    const push = JSON.stringify({ ref: 'refs/heads/main', after: 'f00', commits: [], repository: { full_name: 'me/repo' } });
    const form = `payload=${encodeURIComponent(JSON.stringify({ action: 'opened', issue: { number: 3 }, repository: { full_name: 'me/repo' } }))}`;
    const stripe = JSON.stringify({ id: 'evt_s', type: 'charge.refunded', data: { object: { id: 'ch_s', amount_refunded: 5, currency: 'eur' } } });
    const slack = JSON.stringify({ type: 'event_callback', team_id: 'T1', event_id: 'EvS', event: { type: 'message', channel: 'C1' } });
    const answers = [
      await post(k, '/webhooks/github', push, { 'x-github-event': 'push', 'x-github-delivery': 'd1', 'x-hub-signature-256': githubSignature(SECRETS['github-webhook'], push) }),
      await post(k, '/webhooks/github-form', form, { 'x-github-event': 'issues', 'x-github-delivery': 'd2', 'x-hub-signature-256': githubSignature(SECRETS['github-webhook'], form) }, 'application/x-www-form-urlencoded'),
      await post(k, '/webhooks/stripe', stripe, { 'stripe-signature': stripeSignature(SECRETS['stripe-webhook'], stripe, nowSeconds()) }),
      await post(k, '/webhooks/slack', slack, slackHeaders(SECRETS['slack-signing'], slack)),
    ];
    expect(answers.map((r) => r.json())).toEqual([...answers.slice(0, 3).map((r) => ({ cid: r.headers['x-svc-cid'] })), { ok: true }]);
    await logLine(logs, 'webhook-github', /^GitHub push to me\/repo/);
    await logLine(logs, 'webhook-github', /^GitHub issue #3 opened/);
    await logLine(logs, 'webhook-stripe', /^Stripe charge ch_s refunded/);
    await logLine(logs, 'slack-event', /^Slack message in C1 \(event EvS/);
    await until(k, (r) => r.length === 0);
  });
});
