import { setTimeout as sleep } from 'node:timers/promises';
import { CLK_TCK, mainThreadWakeups, median, printGrid, procStat, processTree, sandboxPids, startSvcCli, withBareFastify } from '../lib.ts';
import { tenantNode } from './tenants.ts';

/**
 * What a server costs while nothing happens (`npm run bench -- idle`): the CPU its processes use
 * (ms per minute, from /proc) and how often each process's main thread is woken (its voluntary
 * context switches per second: a timer firing, a socket turning readable). Each server gets one
 * call to each service, then BENCH_IDLE_SETTLE_S (past the default `idle_ms` of 30 s, after which
 * unused isolates are dropped) before BENCH_IDLE_S of measuring. The baseline is bare Fastify,
 * idle in its own process in the same run.
 *
 * Cases: svc's default config (two sandbox processes) with one service; and, on a Node line that
 * runs tenants (22 or 24), BENCH_IDLE_TENANTS tenants with a sandbox process of their own each.
 */
const SETTLE_S = Number(process.env.BENCH_IDLE_SETTLE_S ?? 40);
const MEASURE_S = Number(process.env.BENCH_IDLE_S ?? 30);
const TENANTS = Number(process.env.BENCH_IDLE_TENANTS ?? 5);

const HELLO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ hello: 'world' }) });\n`;

interface Idle {
  /** CPU of the whole process tree, ms per minute. */
  cpuMsPerMin: number;
  /** The main process's main thread, wakeups per second. */
  mainWakeups: number;
  /** Each sandbox process's main thread, wakeups per second. */
  sandboxWakeups: number[];
  processes: number;
}

/** Measures a running server's process tree for MEASURE_S, after SETTLE_S. */
async function measureIdle(root: number): Promise<Idle> {
  await sleep(SETTLE_S * 1000);
  const tree = processTree(root);
  const sandboxes = sandboxPids(root);
  const ticks = () => tree.reduce((sum, pid) => sum + (procStat(pid)?.ticks ?? 0), 0);
  const t0 = ticks();
  const w0 = [root, ...sandboxes].map(mainThreadWakeups);
  await sleep(MEASURE_S * 1000);
  const w1 = [root, ...sandboxes].map(mainThreadWakeups);
  const cpuMs = ((ticks() - t0) * 1000) / CLK_TCK;
  const perSecond = w1.map((w, i) => (w - w0[i]!) / MEASURE_S);
  return { cpuMsPerMin: (cpuMs * 60) / MEASURE_S, mainWakeups: perSecond[0]!, sandboxWakeups: perSecond.slice(1), processes: tree.length };
}

async function svcIdle(config: Record<string, unknown>, services: Record<string, string>, paths: string[], node?: string): Promise<Idle> {
  const svc = await startSvcCli({ server: { log_level: 'warn' }, ...config }, services, paths[0]!, undefined, {}, node);
  try {
    for (const path of paths) await (await fetch(svc.url + path)).arrayBuffer();
    return await measureIdle(svc.pid);
  } finally {
    await svc.stop();
  }
}

function tenantsSetup(count: number): { config: Record<string, unknown>; services: Record<string, string>; paths: string[] } {
  const tenants = [];
  const services: Record<string, string> = {};
  const paths: string[] = [];
  for (let i = 1; i <= count; i++) {
    const name = `t${i}`;
    tenants.push({ name, services_dir: `tenants/${name}`, processes: 1, config: { channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] } });
    services[`../tenants/${name}/hello.ts`] = HELLO;
    // A tenant's channels are served under /t/<tenant> (docs/tenants.md).
    paths.push(`/t/${name}/hello`);
  }
  return { config: { tenants }, services, paths };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);

export async function run(): Promise<void> {
  const bare = await withBareFastify(async (t) => {
    await (await fetch(t.url)).arrayBuffer();
    return measureIdle(t.pids[0]!);
  });
  const cases: Array<[string, Idle | string]> = [['bare Fastify hello-world (baseline)', bare]];
  cases.push(['svc, default config (2 sandbox processes), 1 service', await svcIdle({ channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] }, { 'hello.ts': HELLO }, ['/hello'])]);
  const node = tenantNode();
  if (node === undefined) cases.push([`svc, ${TENANTS} tenants with a process of their own`, 'no Node 22 or 24 here (scripts/node-line.sh)']);
  else {
    const { config, services, paths } = tenantsSetup(TENANTS);
    cases.push([`svc, ${TENANTS} tenants with a sandbox process of their own each, 1 service each`, await svcIdle(config, services, paths, node)]);
  }
  const rows = cases.map(([name, r]) =>
    typeof r === 'string'
      ? [name, '', '', '', '', '', r]
      : [name, String(r.processes), fmt(r.cpuMsPerMin), bare.cpuMsPerMin >= 10 ? fmt(r.cpuMsPerMin / bare.cpuMsPerMin, 0) : `bare ${fmt(bare.cpuMsPerMin)}`, fmt(r.mainWakeups, 1), r.sandboxWakeups.length ? `${fmt(median(r.sandboxWakeups), 1)} (max ${fmt(Math.max(...r.sandboxWakeups), 1)})` : '', ''],
  );
  printGrid(
    `Idle: CPU and wakeups of a server with nothing to do (${SETTLE_S} s after one call to each service, then ${MEASURE_S} s measured; Node ${process.versions.node}, tenants on their own line)`,
    ['case', 'processes', 'CPU ms per minute', 'vs bare', 'main thread wakeups/s', 'each sandbox process wakeups/s (median)', 'note'],
    rows,
  );
}
