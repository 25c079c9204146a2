import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseExposition, startObserved, sampleValue, type ObservedKernel } from '../support.ts';

const TOKEN = 'metrics-token-0123456789';

describe('plugins.metrics.config.token', () => {
  let k: ObservedKernel;
  beforeAll(async () => {
    k = await startObserved({ config: 'plugins:\n  metrics: { config: { token: "${METRICS_TOKEN}", process_metrics: false } }\n', env: { METRICS_TOKEN: TOKEN } });
  }, 30_000);
  afterAll(() => k?.close());

  it('refuses a scrape without the bearer token, or with another, with 401 and the CID body', async () => {
    for (const authorization of [undefined, 'Bearer not-the-token-0123456', `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`, TOKEN]) {
      const res = await fetch(`${k.admin}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
      const cid = res.headers.get('x-svc-cid');
      expect(res.status, authorization).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="svc metrics"');
      expect(await res.json()).toEqual({ result: 'Error', cid, details: 'Unauthorized' });
    }
  });

  it('answers with it; process metrics left out when turned off', async () => {
    const res = await fetch(`${k.admin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const samples = parseExposition(await res.text());
    expect(sampleValue(samples, 'svc_sandbox_processes')).toBe(1);
    expect(samples.filter((s) => s.name.startsWith('process_') || s.name.startsWith('nodejs_'))).toEqual([]);
  });

  it('never logs the token', () => {
    expect(JSON.stringify(k.logs)).not.toContain(TOKEN);
  });
});

describe('plugins: { metrics: false }', () => {
  it('serves no /metrics, and the probes still answer on the admin listener', async () => {
    const k = await startObserved({ config: 'plugins:\n  metrics: false\n' });
    try {
      const res = await fetch(`${k.admin}/metrics`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ result: 'Error', cid: res.headers.get('x-svc-cid'), details: 'Not found' });
      expect((await fetch(`${k.admin}/health`)).status).toBe(200);
    } finally {
      await k.close();
    }
  }, 30_000);
});
