import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { SPAWNER_TITLE } from '../../kernel/sandbox/spawner.ts';
import { makeProject, startCli, type CliServer } from '../helpers/cli.ts';
import { cpuMs } from '../helpers/proc.ts';
import { waitFor } from '../helpers/wait.ts';

/** CPU an idle sandbox process does not use in the few seconds this takes, and a spinning one uses at once. */
const SPINNING_MS = 300;

/** Processes by parent pid, and each one's command line. */
function processTable(): Array<{ pid: number; ppid: number; cmdline: string }> {
  const out: Array<{ pid: number; ppid: number; cmdline: string }> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      out.push({ pid: Number(name), ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** A server's descendants: its spawner and the sandbox processes the spawner started from the worker bundle. */
function descendantsOf(pid: number): { spawners: number[]; sandboxes: number[] } {
  const table = processTable();
  const spawners = table.filter((p) => p.ppid === pid && p.cmdline.startsWith(SPAWNER_TITLE)).map((p) => p.pid);
  const sandboxes = table.filter((p) => (p.ppid === pid || spawners.includes(p.ppid)) && p.cmdline.includes('svc-sandbox-')).map((p) => p.pid);
  return { spawners, sandboxes };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let server: CliServer | undefined;
afterAll(() => {
  if (server?.proc.exitCode === null) server.proc.kill('SIGKILL');
  if (server) rmSync(server.dir, { recursive: true, force: true });
});

it('a sandbox process whose isolate is stuck in service code dies with its kernel (no orphan burns a core)', async () => {
  const dir = makeProject(
    `server: { port: 0, sandbox: { workers: 1, max_timeout_ms: 60000 } }
channel_rest:
  - { name: spin, url_path: /spin, service: spin, security: none }
`,
    { 'spin.js': `import { service } from 'svc/sdk';\nexport default service({ limits: { timeoutMs: 60000 }, handle() { for (;;) {} } });` },
  );
  server = await startCli(dir);
  const { spawners, sandboxes } = descendantsOf(server.proc.pid!);
  expect(spawners.length).toBe(1);
  expect(sandboxes.length).toBe(1);
  const idle = cpuMs(sandboxes[0]!)!;
  void fetch(server.url + '/spin').catch(() => undefined);
  // The premise, seen rather than slept for: the sandbox process burns CPU, stuck in the loop.
  await waitFor('the sandbox process to spin in service code', () => (cpuMs(sandboxes[0]!) ?? 0) - idle >= SPINNING_MS, 10_000);
  await server.stop('SIGKILL');
  const until = Date.now() + 3000;
  while (Date.now() < until && [...spawners, ...sandboxes].some(alive)) await new Promise((r) => setTimeout(r, 50));
  expect(sandboxes.filter(alive)).toEqual([]);
  expect(spawners.filter(alive)).toEqual([]);
}, 30_000);
