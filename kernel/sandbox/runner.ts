import type { Logger } from 'pino';
import type { TenantConfig } from '../../sdk/plugin/config.ts';
import type { Clock } from '../platform/clock.ts';
import type { TenantLedger } from '../tenants/ledger.ts';
import type { CallInFlight, DeployOutcome, HostCallHandler, HostCaller, NestedCall, PoolCaps } from './pool.ts';
import type { InvokeRequest, InvokeResult, SandboxStats } from './protocol.ts';

export type { SandboxStats } from './protocol.ts';

export type { CallInFlight, DeployOutcome, HostCallHandler, HostCaller, NestedCall, PoolCaps };

/**
 * All the kernel asks of the sandbox runner. Everything behind it (processes, isolates, the wire,
 * crash attribution) stays in this folder; see README.md.
 */
export interface ServiceRunner {
  /**
   * Loads a service's transpiled code into the sandboxes; resolves its metadata or why it was
   * refused. With the transpiler's source map, positions in deploy errors and in exceptions'
   * stack frames are those of the source file.
   */
  deploy(name: string, file: string, code: string, sourceMap?: string): Promise<DeployOutcome>;
  undeploy(name: string): void;
  /**
   * Runs one call; resolves the checked result (or a runtime error envelope), rejects with SvcError.
   * `nested`: a call another call made (`invoke` in the SDK): its depth, its time limit, and its
   * caller, whose process it avoids.
   */
  invoke(request: InvokeRequest, nested?: NestedCall): Promise<InvokeResult>;
  /** Why a service is quarantined, or undefined. */
  quarantineOf(service: string): string | undefined;
  /** Calls not answered yet (what a shutdown past its deadline cuts). */
  inFlight(): CallInFlight[];
  /** The sandbox processes' ids (diagnostics, benchmarks). */
  pids(): number[];
  /** Counters since start and gauges of now, read whenever asked (KernelApi.sandboxStats). */
  stats(): SandboxStats;
  /**
   * The tenants as the config declares them, given on every config apply and before the kernel
   * deploys tenants' services: starts and stops their sandbox processes (the shared ones, a
   * tenant's own), moves a tenant's services when its `processes` changes, and takes its weight
   * and quotas. A removed tenant's own processes stop; its services are undeployed by the kernel.
   */
  setTenants(tenants: readonly TenantConfig[]): Promise<void>;
  close(): Promise<void>;
}


export interface RunnerOptions {
  /** The platform's sandbox processes (`server.sandbox.workers`). */
  processes: number;
  /** The processes tenants share (`server.sandbox.tenant_workers`), started with the first tenant that runs there; default 2. */
  tenantProcesses?: number;
  /** Cores the tenants' shared processes divide by fair shares (fair.ts); default the machine's (os.availableParallelism()). */
  fairCores?: number;
  caps: PoolCaps;
  log: Logger;
  /** Answers host calls services make (publish, outgoing calls); never rejects. */
  hostCall: HostCallHandler;
  /** Called when a call that made host calls is over, however it ended. */
  hostCallsDone?: (request: InvokeRequest) => void;
  /** For durations and deadlines; monotonic unless a test moves it by hand. */
  clock?: Clock;
  /** Tenants' usage and quotas, shared with the kernel's plugins (kernel/tenants/ledger.ts); a new one when absent. */
  ledger?: TenantLedger;
}
