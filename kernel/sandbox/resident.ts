import { readFileSync } from 'node:fs';

/**
 * Resident memory (VmRSS) of a process in MB, read from /proc; undefined where there is no
 * /proc (not Linux) or once the process is gone. A few microseconds: it is read only for
 * sandbox processes that have been idle a while (pool.ts, recycling).
 */
export function residentMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  const m = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return m ? Number(m[1]) / 1024 : undefined;
}
