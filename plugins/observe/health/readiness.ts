import type { KernelApi } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';

export interface Check {
  name: 'startup' | 'store' | 'shutdown' | 'connections';
  ok: boolean;
  /** Why not, when not: short and safe to show anyone who can reach the probe. */
  reason?: string;
}

export interface Readiness {
  ready: boolean;
  checks: Check[];
  /** Which node answered (when the nodes plugin runs): behind a load balancer, the probe says whose it is. */
  node?: { id: string; name: string } | undefined;
  /** Connector connections and inbound channels (kernel.connections()): each one's state, whether or not it counts. */
  connections: Array<{ kind: string; name: string; role: 'connection' | 'channel'; state: string; ready_check: boolean; reason?: string }>;
}

/** Resolves with whether the store answered `SELECT 1` in time; never rejects. */
async function storeAnswers(kernel: KernelApi, timeoutMs: number): Promise<{ ok: true } | { ok: false; why: string }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ ok: false; why: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, why: `no answer within ${timeoutMs} ms` }), timeoutMs);
    timer.unref();
  });
  const ping = kernel.store.one('SELECT 1 AS ok').then(
    () => ({ ok: true }) as const,
    (err: unknown) => ({ ok: false, why: err instanceof Error ? err.message : String(err) }) as const,
  );
  try {
    return await Promise.race([ping, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether this instance should get traffic: started (services deployed, listeners up), its store
 * answering, not draining. Logs when the answer changes, with the store's own error, which the
 * probe's body leaves out.
 */
export class ReadinessProbe {
  private last: boolean | undefined;

  constructor(
    private readonly kernel: KernelApi,
    private readonly storeTimeoutMs: number,
  ) {}

  async check(): Promise<Readiness> {
    const phase = this.kernel.lifecycle();
    const store = await storeAnswers(this.kernel, this.storeTimeoutMs);
    const checks: Check[] = [
      phase === 'starting' ? { name: 'startup', ok: false, reason: 'starting' } : { name: 'startup', ok: true },
      store.ok ? { name: 'store', ok: true } : { name: 'store', ok: false, reason: 'store unreachable' },
      phase === 'draining' ? { name: 'shutdown', ok: false, reason: 'draining' } : { name: 'shutdown', ok: true },
    ];
    const connections = this.kernel.connections().map((c) => ({ kind: c.kind, name: c.name, role: c.role, state: c.state, ready_check: c.readyCheck, ...(c.reason === undefined ? {} : { reason: c.reason }) }));
    // Only connections marked ready_check count: a database one channel uses should not take the whole node out of a load balancer.
    const failing = connections.filter((c) => c.ready_check && c.state !== 'up');
    if (connections.some((c) => c.ready_check)) {
      checks.push(failing.length === 0 ? { name: 'connections', ok: true } : { name: 'connections', ok: false, reason: failing.map((c) => `${c.kind} ${c.name} ${c.state}`).join(', ') });
    }
    const ready = checks.every((c) => c.ok);
    if (ready !== this.last) {
      const failing = checks.filter((c) => !c.ok).map((c) => c.name);
      if (ready) this.kernel.log.info('readiness: ready');
      else this.kernel.log.warn({ failing, store: store.ok ? undefined : store.why }, 'readiness: not ready');
      this.last = ready;
    }
    const node = this.kernel.lookup('cluster.node');
    return { ready, checks, node: node && { id: node.id, name: node.name }, connections };
  }
}

/** The body's `details` when not ready, e.g. `Not ready: store unreachable`. */
export function notReadyDetails(r: Readiness): string {
  return `Not ready: ${r.checks
    .filter((c) => !c.ok)
    .map((c) => c.reason)
    .join(', ')}`;
}
