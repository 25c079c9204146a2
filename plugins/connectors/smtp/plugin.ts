import { z } from 'zod';
import type { Logger } from 'pino';
import { definePlugin, type ConnectionReport, type KernelApi, type SvcConfig } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';
import { BuiltByName } from '../shared/built.ts';
import { SmtpConnection } from './connection.ts';
import { mailRunner, QUEUE_PREFIX, queueOf, sendHostCall } from './send.ts';
import { smtpConnectionSectionSchema, validateSmtp } from './schema.ts';

interface SmtpState {
  kernel: KernelApi;
  log: Logger;
  /** An unchanged entry keeps its pool when the config changes elsewhere. */
  connections: BuiltByName<SmtpConnection>;
  runnerAdded: boolean;
}

async function onConfig(state: SmtpState, config: SvcConfig): Promise<void> {
  // The Use queue set up after this plugin's setup; the runner is registered here, before its scheduler starts (its onConfig comes later).
  const durable = state.kernel.lookup('events.durable');
  if (durable && !state.runnerAdded) {
    durable.addRunner(QUEUE_PREFIX, mailRunner((name) => state.connections.get(name)));
    state.runnerAdded = true;
  }
  const { retired } = state.connections.sync(config.smtp_connection, (entry) => new SmtpConnection(entry, state.kernel, state.log));
  for (const entry of config.smtp_connection) {
    const conn = state.connections.get(entry.name)!;
    const { max_attempts, base_delay_ms, max_delay_ms, concurrency, max_depth } = entry.delivery;
    durable?.declareQueue(queueOf(entry.name), { max_attempts, base_delay_ms, max_delay_ms, concurrency, max_depth, jitter: true });
    if (entry.ready_check) conn.verify().catch((err: unknown) => state.log.warn({ connection: entry.name, err: err instanceof Error ? err.message : String(err) }, 'SMTP: connection check failed'));
  }
  // Sends in flight on a retired pool finish: nodemailer's close lets them end.
  await Promise.all(retired.map((c) => c.close()));
}

function reports(state: SmtpState): ConnectionReport[] {
  return [...state.connections.values()].map((conn) => {
    // /ready asking re-checks a ready_check connection (at most every 30 s; the answer comes with the next ask).
    if (conn.entry.ready_check) conn.verify().catch(() => {});
    const r: ConnectionReport = { kind: 'smtp', name: conn.entry.name, role: 'connection', state: conn.state, readyCheck: conn.entry.ready_check, meter: conn.meter };
    if (conn.state !== 'up' && conn.reason !== undefined) r.reason = conn.reason;
    return r;
  });
}

/** Outgoing mail (SMTP, nodemailer): services send with `mail(name).send(...)`, now or through the Use queue. See README.md. */
export default definePlugin<Record<string, never>, SmtpState>({
  name: 'smtp',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.9.0',
  configSchema: z.object({}).strict().default({}),
  contributes: {
    sections: { smtp_connection: smtpConnectionSectionSchema },
    validateConfig: validateSmtp,
  },
  setup(kernel) {
    const log = kernel.log.child({ plugin: 'smtp' });
    const state: SmtpState = { kernel, log, connections: new BuiltByName(), runnerAdded: false };
    kernel.addHostCall(sendHostCall(kernel, (name) => state.connections.get(name)));
    kernel.addConnections(() => reports(state));
    return state;
  },
  onConfig,
  async stop(state) {
    await Promise.all([...state.connections.values()].map((c) => c.close()));
  },
  hooks: {},
});
