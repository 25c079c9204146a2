import { readFileSync } from 'node:fs';
import { CLK_TCK, procStat } from '../../bench/lib.ts';

/** CPU time (ms, user + system) a process has used so far, from /proc; undefined once it is gone. */
export function cpuMs(pid: number): number | undefined {
  const stat = procStat(pid);
  return stat && (stat.ticks * 1000) / CLK_TCK;
}

/**
 * How many times a process's main thread has gone to sleep and been woken (its voluntary context
 * switches, /proc/PID/status): a timer that fires, a socket that becomes readable. Undefined once it is gone.
 */
export function mainThreadWakeups(pid: number): number | undefined {
  try {
    const m = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
