import type { Logger } from 'pino';
import type { Clock } from '../platform/clock.ts';
import type { TenantConfig } from '../../sdk/plugin/config.ts';
import { SandboxPool, type CallInFlight, type DeployOutcome, type HostCallHandler, type HostCaller, type NestedCall, type PoolCaps } from './pool.ts';
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
  /**
   * The tenants as the config declares them, on every config apply, before their services deploy
   * (docs/tenants.md): their sandbox processes (shared, or their own) and quotas.
   */
  setTenants?(tenants: readonly TenantConfig[]): Promise<void>;
  /** Counters since start and gauges of now, read whenever asked (KernelApi.sandboxStats). */
  stats(): SandboxStats;
  close(): Promise<void>;
}


export interface RunnerOptions {
  processes: number;
  caps: PoolCaps;
  log: Logger;
  /** Answers host calls services make (publish, outgoing calls); never rejects. */
  hostCall: HostCallHandler;
  /** Called when a call that made host calls is over, however it ended. */
  hostCallsDone?: (request: InvokeRequest) => void;
  /** For durations and deadlines; monotonic unless a test moves it by hand. */
  clock?: Clock;
}

/** Starts the sandbox processes with the services' SDK compiled in. */
export async function startServiceRunner(options: RunnerOptions, sdkCode: string): Promise<ServiceRunner> {
  const pool = new SandboxPool(options.processes, options.caps, options.log, options.hostCall, options.hostCallsDone, options.clock);
  await pool.start(sdkCode);
  return pool;
}
