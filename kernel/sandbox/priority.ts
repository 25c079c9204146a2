/**
 * The low CPU priority of tenants' sandbox processes. A process that starts low (demotion.ts
 * says when) is started at it by the spawner (spawner.ts) and lowers every thread it has once
 * more when the kernel says so (worker.ts, `init`); a busy one is lowered by the kernel
 * (demotion.ts). Its own module: the worker's bundle takes it without the protocol's schemas.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';

/** The nice value of a tenant's sandbox process started low or demoted: the lowest there is. */
export const TENANT_NICE = 19;

/**
 * Lowers this process's threads to TENANT_NICE: a tenant's process started low (`caps.belowNormalPriority`,
 * see demotion.ts for when). The spawner has lowered the main thread as soon as the process
 * existed, so Node's start-up ran low too; here, before any isolate exists, the main thread once
 * more (isolated-vm's threads and libuv's pool, started later from it, inherit it), and the
 * threads already running (V8's platform workers, which collect the isolates' garbage, and
 * Node's own) one by one. Every thread: Linux keeps a nice value per thread, and a thread inherits
 * its creator's. Measured (bench/README.md, Tenants, 2026-11-30): nice 10 on the main thread only
 * left a well-behaved tenant's p99 at 1.6–2.2× its solo p99 under another's memory bombs, 19 on
 * every thread at 1.4; SCHED_IDLE (`chrt -i`) made it worse under infinite loops (2.1–2.5×), the
 * victim's own isolate then waiting behind the attacker's like any idle-class thread. Lowering a
 * priority needs no privilege; where it is refused a thread runs at the priority it has.
 */
export function lowerPriority(): void {
  try {
    setPriority(0, TENANT_NICE);
  } catch {
    /* refused: the priority stays as it was */
  }
  lowerThreads('self');
}

/** Every thread of a process (`self`: this one) to TENANT_NICE; those that end meanwhile, or refuse, are skipped. */
export function lowerThreads(pid: number | 'self'): void {
  let threads: string[] = [];
  try {
    threads = readdirSync(`/proc/${pid}/task`);
  } catch {
    return; // gone, or no procfs (not Linux): the threads keep their priority
  }
  for (const tid of threads) {
    try {
      // On Linux, setpriority(PRIO_PROCESS, tid) sets that one thread's nice value.
      setPriority(Number(tid), TENANT_NICE);
    } catch {
      /* the thread ended, or the change was refused */
    }
  }
}
