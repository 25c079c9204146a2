import { definePlugin, errorBody, type ConfigIssue, type Exchange, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { notReadyDetails, ReadinessProbe, type Readiness } from './readiness.ts';
import { HEALTH_PATH, healthOptionsSchema, READY_PATH, type HealthOptions } from './schema.ts';

const NO_STORE = { 'cache-control': 'no-store' };
const LIVE = { status: 'ok' };

function readyBody(cid: string, r: Readiness): Record<string, unknown> {
  const extra = { ...(r.node && { node: r.node }), ...(r.connections.length > 0 && { connections: r.connections }) };
  return r.ready ? { status: 'ready', checks: r.checks, ...extra } : { ...errorBody(cid, notReadyDetails(r)), checks: r.checks, ...extra };
}

/** The options as config gives them (validateConfig sees the whole config, not the parsed options). */
function optionsIn(config: SvcConfig): HealthOptions {
  const entry = config.plugins?.health;
  const parsed = healthOptionsSchema.safeParse(typeof entry === 'object' ? entry.config : undefined);
  return parsed.success ? parsed.data : healthOptionsSchema.parse(undefined);
}

/** On the channel listener the probes are plugin routes: a channel claiming their paths is refused, not silently shadowed. */
function reservedPaths(config: SvcConfig): ConfigIssue[] {
  if (!optionsIn(config).channel_listener) return [];
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((channel, i) => {
    if (channel.url_path === HEALTH_PATH || channel.url_path === READY_PATH) {
      issues.push({ path: ['channel_rest', i, 'url_path'], message: `${channel.url_path} is the health plugin's probe (set plugins.health.config.channel_listener: false to use it for a channel)` });
    }
  });
  return issues;
}

/**
 * Liveness (/health) and readiness (/ready) probes, on the channel listener and the admin
 * listener. See README.md.
 */
export default definePlugin<HealthOptions, ReadinessProbe>({
  name: 'health',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.1.0',
  configSchema: healthOptionsSchema,
  contributes: { validateConfig: reservedPaths },
  setup(kernel, options) {
    const probe = new ReadinessProbe(kernel, options.store_timeout_ms);
    if (options.channel_listener) {
      kernel.addRoute({ name: 'health live', method: ['GET', 'HEAD'], url: HEALTH_PATH, handler: (ex: Exchange) => ex.reply(200, LIVE, NO_STORE) });
      kernel.addRoute({
        name: 'health ready',
        method: ['GET', 'HEAD'],
        url: READY_PATH,
        handler: async (ex: Exchange) => {
          const r = await probe.check();
          ex.reply(r.ready ? 200 : 503, readyBody(ex.cid, r), NO_STORE);
        },
      });
    }
    // Looked up once every plugin has set up, whatever the plugins' order.
    kernel.onListen(async () => {
      const endpoints = kernel.lookup('admin.endpoints');
      if (!endpoints) return;
      const json = 'application/json; charset=utf-8';
      endpoints.add(HEALTH_PATH, () => ({ status: 200, contentType: json, body: JSON.stringify(LIVE) }));
      endpoints.add(READY_PATH, async ({ cid }) => {
        const r = await probe.check();
        return { status: r.ready ? 200 : 503, contentType: json, body: JSON.stringify(readyBody(cid, r)) };
      });
    });
    return probe;
  },
  hooks: {},
});
