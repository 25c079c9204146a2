/**
 * Demotion of a tenant's busy sandbox process to the lowest CPU priority, from the kernel's side.
 *
 * A tenant's own processes (`processes` 1 or more) start at the normal priority. When their
 * threads together use more than `sandbox.tenant_demote_cores` over about a second (a loop, a
 * memory bomb, a flood of work) every one is lowered, every thread, to nice 19 for the rest of
 * its life (an unprivileged process cannot be raised again). The processes tenants share always
 * run low: one tenant's work there cannot be told from another's by the OS, and a busy tenant
 * spread over them would stay under the bar in each. A well-behaved tenant's isolates then take a core from a busy tenant's at once
 * (weight 1024 against 15), where with every tenant at nice 19 they took turns with them as
 * equals: its p99 went up by half again and more while another tenant attacked (bench/README.md,
 * Tenants, 2026-11-30, "demotion"). The kernel reads the CPU from /proc and lowers the threads
 * itself: a sandbox process is not trusted to lower itself.
 */
import { readFileSync } from 'node:fs';
import { monotonicNow } from '../platform/clock.ts';
import { lowerThreads } from './priority.ts';

/** Linux reports a process's CPU time in /proc/PID/stat in USER_HZ ticks, 100 a second on every architecture's user ABI. */
const MS_PER_TICK = 10;
/** How long the CPU is averaged over before a process is judged. */
export const DEMOTE_WINDOW_MS = 1000;

/** CPU time every thread of a process has used, ms (/proc/PID/stat: utime + stime), or undefined (gone, or not Linux). */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, fields 14 and 15 of the line: 11 and 12 after the name and the state.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return Number.isFinite(ticks) ? ticks * MS_PER_TICK : undefined;
}

/** One process's readings, kept by its owner (SandboxWorker.cpu). */
export interface CpuWatch {
  /** Readings within the window, oldest first: when (ms, monotonic) and the process's CPU then (ms). */
  samples: Array<{ at: number; cpuMs: number }>;
  /** Lowered already (or started low): only its threads are looked at again. */
  demoted: boolean;
  /** Walks of its threads still to make once lowered (RELOWER_WALKS). */
  walksLeft: number;
  /** When its isolates met their memory limit, within MEMORY_LIMIT_WINDOW_MS, oldest first. */
  memoryLimits: number[];
}

/**
 * Walks of a lowered process's threads after the first, one per reading: a thread started while
 * a walk ran may have copied its creator's priority before the creator was lowered. Threads
 * started after a walk inherit the low priority, so a few walks settle it.
 */
export const RELOWER_WALKS = 5;

export const newCpuWatch = (demoted: boolean): CpuWatch => ({ samples: [], demoted, walksLeft: demoted ? RELOWER_WALKS : 0, memoryLimits: [] });

/**
 * Memory limits met within this long that make a process one to lower (memoryLimitMet). A memory
 * bomb spends little CPU, the less as its rebuilds are spaced (rebuild-gate.ts), and never crossed
 * the CPU bar: its process kept the normal priority, and its bursts of fresh pages, a core's worth
 * while they last, raised a neighbour's p99 to twice its solo one (bench/README.md, Tenants).
 */
export const MEMORY_LIMIT_WINDOW_MS = 10_000;
export const MEMORY_LIMITS_TO_LOWER = 3;
/** The calls of one isolate that met its limit fail together: results this close are one limit met. */
const SAME_LIMIT_MS = 20;

export interface DemotionDeps {
  readCpuMs?: (pid: number) => number | undefined;
  lower?: (pid: number) => void;
  now?: () => number;
}

export class Demotion {
  private readonly readCpuMs: (pid: number) => number | undefined;
  private readonly lowerThreads: (pid: number) => void;
  private readonly now: () => number;

  /** `aboveCores`: the average over the window past which a group's processes are lowered (the pool sums its processes'). */
  constructor(
    readonly aboveCores: number,
    deps: DemotionDeps = {},
  ) {
    this.readCpuMs = deps.readCpuMs ?? processCpuMs;
    this.lowerThreads = deps.lower ?? ((pid) => void lowerThreads(pid));
    this.now = deps.now ?? monotonicNow;
  }

  /**
   * One process's average cores over about the last window, once its readings span half a window
   * (one busy moment between two close readings is not a busy process); undefined before, and
   * when it cannot be read (gone).
   */
  cores(pid: number, watch: CpuWatch): number | undefined {
    const cpuMs = this.readCpuMs(pid);
    if (cpuMs === undefined) return undefined;
    const at = this.now();
    const samples = watch.samples;
    samples.push({ at, cpuMs });
    while (samples.length > 2 && at - samples[1]!.at >= DEMOTE_WINDOW_MS) samples.shift();
    const first = samples[0]!;
    const span = at - first.at;
    return span < DEMOTE_WINDOW_MS / 2 ? undefined : (cpuMs - first.cpuMs) / span;
  }

  /**
   * Lowers every thread of a process, and marks it so. Called again for a process lowered
   * already, it walks its threads again RELOWER_WALKS times, then does nothing.
   */
  lower(pid: number, watch: CpuWatch): void {
    if (!watch.demoted) {
      watch.demoted = true;
      watch.walksLeft = RELOWER_WALKS;
      watch.samples.length = 0;
    } else if (watch.walksLeft-- <= 0) return;
    this.lowerThreads(pid);
  }

  /**
   * One of the process's isolates met its memory limit (its calls failed with SERVICE_MEMORY_LIMIT).
   * True when that makes MEMORY_LIMITS_TO_LOWER within MEMORY_LIMIT_WINDOW_MS: the process is one
   * to lower. A service that meets its limit now and then is not a memory bomb.
   */
  memoryLimitMet(watch: CpuWatch): boolean {
    if (watch.demoted) return false;
    const now = this.now();
    const limits = watch.memoryLimits;
    const last = limits[limits.length - 1];
    if (last !== undefined && now - last < SAME_LIMIT_MS) return false;
    limits.push(now);
    while (now - limits[0]! > MEMORY_LIMIT_WINDOW_MS) limits.shift();
    return limits.length >= MEMORY_LIMITS_TO_LOWER;
  }

  /** Forgets the readings (the process was busy for a reason of the kernel's: starting, deploying). */
  static reset(watch: CpuWatch): void {
    watch.samples.length = 0;
  }
}

/** `sandbox.tenant_demote_cores` when not set: a quarter of the node's cores, at least half of one. */
export function defaultDemoteCores(cores: number): number {
  return Math.max(0.5, cores / 4);
}
