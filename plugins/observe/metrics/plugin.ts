import { createHash, timingSafeEqual } from 'node:crypto';
import { Registry } from 'prom-client';
import { definePlugin, SvcError } from '../../../sdk/plugin/index.ts';
import type { AdminEndpointRequest } from '../../capabilities.ts';
import { z } from 'zod';
import { SvcMetrics } from './registry.ts';
import { tenantView } from './tenant-view.ts';
import { RequestMeters } from './requests.ts';
import { metricsOptionsSchema, type MetricsOptions } from './schema.ts';

interface MetricsState {
  requests: RequestMeters;
}

export const METRICS_PATH = '/metrics';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** `Authorization: Bearer <token>` when a token is configured; compared in constant time. */
function checkToken(expected: Buffer | undefined, request: AdminEndpointRequest): void {
  if (!expected) return;
  const header = request.headers.authorization;
  const given = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : undefined;
  if (given === undefined || !timingSafeEqual(digest(given), expected)) {
    throw new SvcError('UNAUTHORIZED', undefined, { headers: { 'WWW-Authenticate': 'Bearer realm="svc metrics"' } });
  }
}

/**
 * Prometheus metrics at GET /metrics on the admin listener: requests, latency, the sandbox, queues,
 * rate limits, outgoing calls, token requests, pub/sub depths. See README.md.
 */
export default definePlugin<MetricsOptions, MetricsState>({
  name: 'metrics',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.1.0',
  configSchema: metricsOptionsSchema,
  setup(kernel, options) {
    const requests = new RequestMeters(options.buckets);
    const metrics = new SvcMetrics(kernel, requests, options.process_metrics);
    const token = options.token === undefined ? undefined : digest(options.token);
    // The same text for the admin API, where a tenant's administrators see their tenant's series only.
    kernel.addControl({
      op: 'metrics.show',
      readOnly: true,
      tenantScoped: true,
      args: z.object({}).strict(),
      handler: async (_args, caller) => {
        const text = await metrics.scrape();
        return { text: caller === undefined ? text : tenantView(text, caller.tenant) };
      },
    });
    // Looked up once every plugin has set up, whatever the plugins' order.
    kernel.onListen(async () => {
      const endpoints = kernel.lookup('admin.endpoints');
      if (!endpoints) {
        kernel.log.warn('metrics: no admin listener (the admin plugin is disabled), so /metrics is not served');
        return;
      }
      endpoints.add(METRICS_PATH, async (request) => {
        checkToken(token, request);
        return { status: 200, contentType: Registry.PROMETHEUS_CONTENT_TYPE, body: await metrics.scrape() };
      });
    });
    return { requests };
  },
  hooks: {
    onResponse: ({ channel, state }) => state.requests.recorderFor(channel.name),
  },
});
