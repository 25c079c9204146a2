import { spawnSync } from 'node:child_process';
import { ISOLATED_VM_LINES, NODE_MAJOR, pickLine, resolveLine, unusableLine } from '../platform/native.ts';

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

/** An advisory against the isolated-vm line this Node loads, or undefined (docs/security.md). */
export interface IsolatedVmAdvisory {
  id: string;
  line: string;
  warning: string;
  refusal: string;
}

/**
 * GHSA-864f-rcv7-6rh4: a type confusion in ExternalCopy lets code in an isolate reach outside it;
 * isolated-vm up to 7.0.0 is affected, fixed in 6.2.0 and 7.0.1. Node 20's line is 5.0.4 (the last
 * that builds for it), so untrusted code is not run on Node 20: tenants are refused there.
 */
export function isolatedVmAdvisory(major = NODE_MAJOR): IsolatedVmAdvisory | undefined {
  const line = pickLine(ISOLATED_VM_LINES, major);
  if (line.alias !== 'isolated-vm-5') return undefined;
  return {
    id: 'GHSA-864f-rcv7-6rh4',
    line: line.spec,
    warning: `this Node (${process.versions.node}) runs services on ${line.spec}, affected by GHSA-864f-rcv7-6rh4 (an isolate can reach outside itself through ExternalCopy): run only code you trust here, and no tenants; Node 22 or 24 load a fixed line (docs/security.md)`,
    refusal: `tenants need an isolated-vm line fixed for GHSA-864f-rcv7-6rh4 (6.2.0, or 7.0.1 and later); this Node (${process.versions.node}) loads ${line.spec}, which is affected: start svc with Node 22 or 24 to run tenants (docs/security.md)`,
  };
}

/** Why a config with tenants cannot run on this Node, or undefined. */
export function tenantsRefusedHere(): string | undefined {
  return isolatedVmAdvisory()?.refusal;
}
