import type { FastifyInstance } from 'fastify';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { AdminAccounts } from './accounts.ts';
import { AdminAuth } from './auth.ts';
import { adminCommands, adminControls } from './cli.ts';
import { auditOp } from './ops.ts';
import { ensurePassword } from './credential.ts';
import { EndpointRegistry } from './endpoints.ts';
import { buildAdminApp } from './http.ts';
import { PageRegistry } from './pages.ts';
import { AdminResources } from './resources.ts';
import { adminOptionsSchema, adminServerSchema, type AdminOptions } from './schema.ts';
import { migrateAdmin } from './store.ts';

const VERSION = '1.0.0';

interface AdminState {
  app: FastifyInstance | undefined;
}

/**
 * The management plane's API on its own listener (`server.admin`): config resources generated
 * from the config schema, control ops, audit, export/import, behind a session login or API keys.
 * See README.md.
 */
export default definePlugin<AdminOptions, AdminState>({
  name: 'admin',
  kind: 'other',
  version: VERSION,
  sdk: '^1.18.0',
  needs: ['secrets.vault'],
  provides: ['admin.pages', 'admin.endpoints'],
  configSchema: adminOptionsSchema,
  contributes: {
    serverFields: { admin: adminServerSchema },
    logRedact: ['headers.cookie', 'headers["x-csrf-token"]'],
  },
  async setup(kernel, options) {
    await migrateAdmin(kernel.store);
    const state: AdminState = { app: undefined };
    const resources = new AdminResources(kernel);
    kernel.addConfigLayer(resources.layer());
    resources.followChanges();
    const auth = new AdminAuth(kernel, () => options);
    const pages = new PageRegistry();
    kernel.provide('admin.pages', pages);
    const endpoints = new EndpointRegistry();
    kernel.provide('admin.endpoints', endpoints);
    const own = adminControls(kernel, auth, resources);
    for (const op of own) kernel.addControl(op);
    // The `svc` commands' ops are audited as `cli`; this plugin's own write rows of their own (set-password…).
    const ownNames = new Set(own.map((o) => o.op));
    kernel.onControlRun(async (run) => {
      const entry = ownNames.has(run.op) ? undefined : kernel.controlOps().find((o) => o.op === run.op);
      if (entry) await auditOp(kernel, entry, run.args, run.actor, undefined, run.failure);
    });
    kernel.onListen(async () => {
      const settings = kernel.server().admin ?? adminServerSchema.parse(undefined);
      if (!settings.enabled) return;
      const created = await ensurePassword(kernel.store, kernel.env, kernel.clock.now());
      // Told, not logged: log lines are kept and shipped; this line is for the one who started the server.
      if (created !== undefined) kernel.tellOperator(`first start: the admin password is ${created} (shown once; change it with \`svc admin set-password\`)`);
      const accounts = new AdminAccounts(kernel, auth, resources.scope);
      const app = buildAdminApp({ kernel, auth, resources, accounts, pages, endpoints, version: VERSION });
      state.app = app;
      const address = await app.listen({ host: settings.host, port: adminPort(kernel.env, settings.port) });
      kernel.log.info({ address }, 'svc admin listening');
    });
    return state;
  },
  stop: async (state) => {
    await state.app?.close();
  },
  hooks: {},
  cli: adminCommands,
});

function adminPort(env: NodeJS.ProcessEnv, configured: number): number {
  if (env.SVC_ADMIN_PORT === undefined) return configured;
  const port = Number(env.SVC_ADMIN_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SVC_ADMIN_PORT: not a port number: ${env.SVC_ADMIN_PORT}`);
  return port;
}
