import { spawnSync } from 'node:child_process';
import { ISOLATED_VM_LINES, resolveLine, unusableLine } from '../platform/native.ts';

let entry: string | undefined;

/**
 * Where isolated-vm for this Node is installed, once proved to load. Only sandbox processes load
 * it (with --no-node-snapshot), so the proof is a short child process (about 0.1 s, once per kernel
 * process): a wrong install is then one clear error at start, before anything is opened, not a
 * sandbox process that dies each time it is restarted.
 */
export function isolatedVmEntry(): string {
  if (entry) return entry;
  const candidate = resolveLine(ISOLATED_VM_LINES);
  const probe = spawnSync(process.execPath, ['--no-node-snapshot', '-e', 'require(process.argv[1])', candidate], { encoding: 'utf8', timeout: 30_000 });
  if (probe.status !== 0) {
    const reason = (probe.stderr ?? '').split('\n').find((l) => /Error|error:/.test(l))?.trim() ?? `exit ${probe.status ?? probe.signal}`;
    throw unusableLine(ISOLATED_VM_LINES, reason.slice(0, 300));
  }
  return (entry = candidate);
}
