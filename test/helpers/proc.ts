import { CLK_TCK, procStat } from '../../bench/lib.ts';

/** CPU time (ms, user + system) a process has used so far, from /proc; undefined once it is gone. */
export function cpuMs(pid: number): number | undefined {
  const stat = procStat(pid);
  return stat && (stat.ticks * 1000) / CLK_TCK;
}

export { mainThreadWakeups } from '../../bench/lib.ts';
