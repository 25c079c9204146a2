import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { sandboxSchema } from '../../../kernel/config/schema.ts';
import type { Clock } from '../../../kernel/platform/clock.ts';
import type { HostCallHandler, ServiceRunner } from '../../../kernel/sandbox/runner.ts';
import { startServiceRunner } from '../../../kernel/sandbox/groups.ts';
import type { InvokeRequest } from '../../../kernel/sandbox/protocol.ts';
import { buildSdkBundle } from '../../../kernel/services/registry.ts';
import type { TenantConfig } from '../../../sdk/plugin/config.ts';

/**
 * A sandbox runner of its own for the tenants' tests: real processes and isolates, driven through
 * the ServiceRunner interface as the kernel drives it (setTenants, deploy, invoke), without the
 * kernel, whose tenant config and directories are tested where they live.
 */

let sdk: string | undefined;

export interface RunnerSetup {
  workers?: number;
  tenantWorkers?: number;
  fairCores?: number;
  clock?: Clock;
  hostCall?: HostCallHandler;
  /** Time limit of services that declare none (ms). */
  timeoutMs?: number;
  /** sandbox.tenant_demote_cores; absent, tenants' processes start low (as with 0). */
  demoteAboveCores?: number;
}

export async function startRunner(setup: RunnerSetup = {}): Promise<ServiceRunner> {
  const sandbox = sandboxSchema.parse(undefined);
  return startServiceRunner(
    {
      processes: setup.workers ?? 1,
      tenantProcesses: setup.tenantWorkers ?? 1,
      fairCores: setup.fairCores,
      caps: {
        spillAt: sandbox.spill_at,
        defaultMemoryMb: sandbox.memory_mb,
        maxMemoryMb: sandbox.max_memory_mb,
        defaultTimeoutMs: setup.timeoutMs ?? sandbox.timeout_ms,
        maxTimeoutMs: sandbox.max_timeout_ms,
        maxOutputBytes: sandbox.max_output_bytes,
        idleMs: 0,
        demoteAboveCores: setup.demoteAboveCores,
      },
      log: pino({ level: 'silent' }),
      hostCall: setup.hostCall ?? (async () => JSON.stringify({ ok: true, value: null })),
      clock: setup.clock,
    },
    (sdk ??= buildSdkBundle()),
  );
}

/** A tenant as the config schema fills it in. */
export function tenant(name: string, extra: Partial<TenantConfig> = {}): TenantConfig {
  return { name, processes: 0, weight: 1, quotas: {}, ...extra };
}

/** Deploys services from source (plain JavaScript, as a service file after transpiling); throws when one is refused. */
export async function deploy(runner: ServiceRunner, services: Record<string, string>): Promise<void> {
  await Promise.all(
    Object.entries(services).map(async ([name, code]) => {
      const outcome = await runner.deploy(name, `${name.replace('/', '-')}.js`, code);
      if (!outcome.ok) throw new Error(`${name} did not deploy: ${outcome.error}`);
    }),
  );
}

let n = 0;
export function request(service: string, input: Record<string, unknown> = {}): InvokeRequest {
  return { service, cid: `t${(n++).toString(16).padStart(12, '0')}`, method: 'POST', input };
}

/** A service that answers at once with its input. */
export const ECHO = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ echo: ctx.input }) });\n`;

/**
 * A service that does `ctx.input.n` rounds of arithmetic: CPU work, not a wait on the clock, so
 * that it takes longer when it gets less of a core.
 */
export const WORK = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 30000 }, handle(ctx) {
  let x = 0;
  for (let i = 0; i < ctx.input.n; i++) x = (x * 31 + i) % 1000003;
  return { x };
} });
`;

/** A service whose call kills its sandbox process (a V8 fatal error in isolated-vm 5). */
export const CRASH = `import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 15000, memoryMb: 32 }, handle: () => '1'.repeat(0xfffffff).split('') });
`;

export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** CPU ms a process used so far (utime + stime of /proc/PID/stat). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
