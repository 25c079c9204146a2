/**
 * Issue 43: a well-behaved tenant's latency alone and while another tenant attacks the server
 * (infinite loops, memory bombs, V8 crash loops, floods of calls, invokes and queued events,
 * outgoing call storms). svc started through the CLI as an operator would, with tenant `victim`,
 * a tenant per attack and tenant `attacker` making them all at once (bench/tenants/setup.ts); the
 * victim's client is an open-loop generator in a process of its own (bench/tenants/open-loop.ts),
 * the attack clients in another (bench/tenants/attacker.ts), which runs at nice 19 as does the
 * outgoing calls' far end (bench/tenants/sink.ts): both stand in for machines elsewhere. Solo and
 * attack rounds interleaved;
 * goal: the victim's p99 within 1.5× its solo p99, none of its requests failed. Once with each
 * tenant in a sandbox process of its own, once with all in the tenants' shared processes.
 *
 * BENCH_ROUNDS, BENCH_SECONDS (3 here), BENCH_TENANT_RATE (200 req/s), BENCH_TENANT_ATTACKS (a
 * comma-separated subset), BENCH_TENANT_SHARED_ROUNDS (2; 0 skips the shared processes' run).
 * BENCH_TENANT_DEMOTE_CORES sets `sandbox.tenant_demote_cores` (0: tenants' processes low from the start).
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CLK_TCK, freePort, machineBusyTicks, median, printGrid, procStat, processTree, ROUNDS, startSvcCli, SVC_BIN, type Running } from '../lib.ts';
import type { AttackBy, Outcomes } from '../tenants/attacker.ts';
import type { Round } from '../tenants/open-loop.ts';
import { ALL_ATTACKER, ATTACK_NAMES, ATTACKS, attackerOf, ORDER, serverSetup, type AttackName } from '../tenants/setup.ts';

/** Seconds the victim is measured per round (3 unless BENCH_SECONDS says otherwise: 31 rounds and their cool-downs fit in about 4 minutes). */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
/** The victim's arrival rate, requests per second. */
const RATE = Number(process.env.BENCH_TENANT_RATE ?? 200);
/**
 * The victim's load before the first round, seconds. Until 2026-12-01 (sixth session) 2: the
 * kernel's JIT was still tiering up the victim's path 0.55 s into the first round (TurboFan
 * finishing code on the event loop, `perf`), which stalled it 30–45 ms, and the first solo round's
 * p99 was 3–4 times the others'.
 */
const WARM_UP_SECONDS = 6;
/** The attack runs this long before the victim's round starts, so the round meets it in full swing. */
const ATTACK_LEAD_MS = 1_000;
/** After an attack, the longest wait for the server to fall quiet (calls run out their time limits, queues drain). */
const COOL_DOWN_MAX_MS = 20_000;
/** The nice value of the programs that stand in for other machines (the attack clients, the outgoing calls' far end). */
const LOWEST_PRIORITY = 19;

/** A case: no attack (solo), one attack by its own tenant, or all at once by one tenant. */
interface Case {
  name: string;
  attacks: AttackBy[];
}

/** One round of one case: the victim's latencies, what the attacker got, what the server used. */
interface Measured {
  victim: Round;
  attacker: Outcomes;
  /** Cores busy in the kernel process, the attacker's isolates, the victim's, and the whole server. */
  kernelCores: number;
  attackerCores: number;
  victimCores: number;
  serverCores: number;
  /** Cores busy with neither the server nor the suite's clients: other work on the machine (noise). */
  otherCores: number;
  /** The share of the round the kernel's main thread and the victim client's waited for a CPU while runnable. */
  kernelWaited: number;
  clientWaited: number;
  /** The kernel's longest event-loop stall in the round, ms. */
  lagMaxMs: number;
  /** When the victim's round ran (epoch ms, from its first request's due time to its last answer): its lines of the access log. */
  window: [number, number];
  /** The victim's p99 as the server timed it (the access log's `ms`: from the request's arrival to its answer's end), once read. */
  serverP99?: number;
  /** How long the server took to fall quiet after the attack stopped, ms. */
  coolDownMs: number;
  /** Queued events of the attacker still waiting after COOL_DOWN_MAX_MS, deleted so the next round starts clean. */
  purged: number;
}

/** A Node binary of a line that runs tenants (22 or 24): this one, or Node 24 from scripts/node-line.sh. */
export function tenantNode(): string | undefined {
  const major = Number(process.versions.node.split('.')[0]);
  if (major === 22 || major === 24) return process.execPath;
  const script = fileURLToPath(new URL('../../scripts/node-line.sh', import.meta.url));
  const r = spawnSync('bash', [script, '24'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return r.status === 0 && r.stdout.trim() ? `${r.stdout.trim()}/bin/node` : undefined;
}

/**
 * A child program of bench/tenants, with the messages it sends; ready once it says so (its ready
 * message is `ready`). `nice`: the attack clients and the outgoing calls' far end run at the lowest
 * priority: they stand in for machines elsewhere, and on this machine take from the server under
 * test (and from the victim's client) only the cores those leave idle.
 */
function child(file: string, args: string[], nice = 0): Promise<{ proc: ChildProcess; ask: <T>(m: unknown) => Promise<T>; ready: Record<string, unknown> }> {
  const proc = fork(fileURLToPath(new URL(`../tenants/${file}`, import.meta.url)), args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (nice && proc.pid !== undefined) setPriority(proc.pid, nice);
  const ask = <T>(m: unknown) =>
    new Promise<T>((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`${file} exited with ${code}`));
      proc.once('exit', exited);
      proc.once('message', (r) => {
        proc.off('exit', exited);
        resolve(r as T);
      });
      if (m !== undefined) proc.send(m as object);
    });
  return ask<Record<string, unknown>>(undefined).then((ready) => ({ proc, ask, ready }));
}

/** prom-client's eventLoopMonitoringPrecision (its default): the interval of the timer whose lateness the lag histogram records. */
const LAG_TIMER_MS = 10;

/** Between the scrape before a round and the round: a scrape holds the kernel's loop a few ms (rendering ~80 KB), which the victim's first requests would wait out. */
const AFTER_SCRAPE_MS = 200;

/** `svc_tenant_cpu_seconds_total` and the other series a cool-down watches, from the admin listener's /metrics. */
async function scrape(adminUrl: string): Promise<{ cpu: Record<string, number>; inFlight: number; queued: number; lagMaxMs: number }> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const cpu: Record<string, number> = {};
  let inFlight = 0;
  let queued = 0;
  // prom-client's event-loop delay histogram of the kernel process, reset at every scrape: the longest stall since the last one.
  // It records the time between ticks of a 10 ms timer, so an idle loop reads 10 ms: the stall is what exceeds that.
  const lagMaxMs = Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1] ?? NaN) * 1000 - LAG_TIMER_MS;
  for (const line of text.split('\n')) {
    const m = /^(svc_tenant_cpu_seconds_total|svc_tenant_calls_in_flight|svc_queue_depth|svc_queue_running)\{([^}]*)\} (\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    const tenant = /tenant="([^"]*)"/.exec(m[2]!)?.[1];
    if (m[1] === 'svc_tenant_cpu_seconds_total' && tenant) cpu[tenant] = value;
    else if (m[1] === 'svc_tenant_calls_in_flight') inFlight += value;
    else queued += value;
  }
  return { cpu, inFlight, queued, lagMaxMs };
}

/** Nanoseconds a thread has waited for a CPU while runnable so far (/proc/PID/task/TID/schedstat, second field). */
function runQueueWaitNs(pid: number, tid = pid): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]);
  } catch {
    return 0;
  }
}

const ticks = (pids: number[]) => pids.reduce((n, pid) => n + (procStat(pid)?.ticks ?? 0), 0);

/**
 * Waits until no tenant's call is in flight, no queued event is waiting and the server's
 * processes idle for 300 ms; how long that took, ms. Events a tenant's quota holds wait in the
 * queue until the quota has room (the CPU of the last minute: up to a minute): past
 * COOL_DOWN_MAX_MS those still pending are deleted, as an operator would (`svc queue delete`),
 * so they do not run in the next round, and counted.
 */
async function coolDown(svc: Running, adminUrl: string, purge: () => number): Promise<{ ms: number; purged: number }> {
  const start = performance.now();
  let purged = 0;
  for (let deadline = start + COOL_DOWN_MAX_MS; ; ) {
    const pids = processTree(svc.pid);
    const before = ticks(pids);
    await new Promise((r) => setTimeout(r, 300));
    const busy = (ticks(pids) - before) / CLK_TCK / 0.3;
    const m = await scrape(adminUrl);
    if (m.inFlight === 0 && m.queued === 0 && busy < 0.05) break;
    if (performance.now() < deadline) continue;
    if (purged || m.queued === 0) break;
    purged = purge();
    deadline = performance.now() + 5_000;
  }
  return { ms: performance.now() - start, purged };
}

/** Deletes every pending queued event through the CLI (`svc queue delete --all --state pending`); how many. */
function purgeQueued(node: string, dir: string): number {
  const r = spawnSync(node, [SVC_BIN, 'queue', 'delete', '--all', '--state', 'pending', '--config', join(dir, 'svc.yaml')], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`svc queue delete failed (${r.status}): ${r.stderr}${r.stdout}`);
  return Number(/deleted (\d+) event/.exec(r.stdout)?.[1] ?? 0);
}

async function measure(c: Case, svc: Running, purge: () => number, adminUrl: string, victim: Awaited<ReturnType<typeof child>>, attacker: Awaited<ReturnType<typeof child>>, sinkPid: number): Promise<Measured> {
  if (c.attacks.length) {
    await attacker.ask({ start: c.attacks });
    await new Promise((r) => setTimeout(r, ATTACK_LEAD_MS));
  }
  const pids = processTree(svc.pid);
  // The attack clients' column also counts the outgoing calls' far end and this suite's process.
  const clients = [victim.proc.pid!, attacker.proc.pid!, sinkPid, process.pid];
  const waits = () => ({ kernel: runQueueWaitNs(svc.pid), client: runQueueWaitNs(victim.proc.pid!) });
  const metricsBefore = { metrics: await scrape(adminUrl), at: performance.now() };
  await new Promise((r) => setTimeout(r, AFTER_SCRAPE_MS));
  const before = { all: ticks(pids), kernel: ticks([svc.pid]), clients: ticks(clients), machine: machineBusyTicks(), waited: waits(), at: performance.now() };
  const roundStart = Date.now();
  const round = await victim.ask<Round>({ run: { seconds: SECONDS } });
  const window: [number, number] = [roundStart, Date.now()];
  const seconds = (performance.now() - before.at) / 1000;
  // Processes started during the round (a crashed sandbox's successor) count from zero.
  const after = { all: ticks(processTree(svc.pid)), kernel: ticks([svc.pid]), clients: ticks(clients), machine: machineBusyTicks(), waited: waits() };
  const metricsAfter = { metrics: await scrape(adminUrl), at: performance.now() };
  const metricsSeconds = (metricsAfter.at - metricsBefore.at) / 1000;
  const outcomes = c.attacks.length ? await attacker.ask<Outcomes>({ stop: true }) : { counts: {}, cpuMs: 0, ms: 0 };
  const cooled = c.attacks.length ? await coolDown(svc, adminUrl, purge) : { ms: 0, purged: 0 };
  const tenantCores = (t: string) => ((metricsAfter.metrics.cpu[t] ?? 0) - (metricsBefore.metrics.cpu[t] ?? 0)) / metricsSeconds;
  const attackersCores = Object.keys(metricsAfter.metrics.cpu)
    .filter((t) => t !== 'victim')
    .reduce((n, t) => n + tenantCores(t), 0);
  return {
    victim: round,
    attacker: outcomes,
    kernelCores: (after.kernel - before.kernel) / CLK_TCK / seconds,
    serverCores: Math.max(0, after.all - before.all) / CLK_TCK / seconds,
    otherCores: Math.max(0, after.machine - before.machine - (after.all - before.all) - (after.clients - before.clients)) / CLK_TCK / seconds,
    attackerCores: attackersCores,
    kernelWaited: (after.waited.kernel - before.waited.kernel) / 1e9 / seconds,
    clientWaited: (after.waited.client - before.waited.client) / 1e9 / seconds,
    victimCores: tenantCores('victim'),
    lagMaxMs: metricsAfter.metrics.lagMaxMs,
    window,
    coolDownMs: cooled.ms,
    purged: cooled.purged,
  };
}

/** The value at quantile q of sorted values (nearest rank). */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

const failuresOf = (r: Round) => Object.values(r.statuses).reduce((a, b) => a + b, 0) + Object.values(r.errors).reduce((a, b) => a + b, 0);

/** What the attacker's requests got, per second of attack over every round: `429 ×5123/s, 504 ×9.6/s`. */
function outcomesText(ms: Measured[]): string {
  const sum: Record<string, number> = {};
  for (const m of ms) for (const [k, n] of Object.entries(m.attacker.counts)) sum[k] = (sum[k] ?? 0) + n;
  const seconds = ms.reduce((t, m) => t + m.attacker.ms, 0) / 1000;
  return Object.entries(sum)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ×${n / seconds >= 10 ? Math.round(n / seconds) : (n / seconds).toFixed(1)}/s`)
    .join(', ');
}

/** Queued events deleted after the cool-downs, when any were: ` (+120 events deleted)`. */
function purgedText(ms: Measured[]): string {
  const n = ms.reduce((t, m) => t + m.purged, 0);
  return n ? ` (${n} queued events deleted)` : '';
}

/**
 * The victim's requests as the server timed them, from its access log (one line per answer, at
 * its end: `time`, and `ms` from the request's arrival). Beside the client's latencies it tells the
 * server's part of a tail from the client's own and the loopback's: both share the machine.
 */
function readServerTimes(log: string, results: Measured[][]): void {
  const times: Array<{ at: number; ms: number }> = [];
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (!line.includes('"channel":"victim/work"')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: unknown; ms?: unknown };
      if (entry.msg === 'request' && typeof entry.time === 'number' && typeof entry.ms === 'number') times.push({ at: entry.time, ms: entry.ms });
    } catch {
      /* a line cut short: not one of the victim's */
    }
  }
  for (const m of results.flat()) {
    const [from, to] = m.window;
    const ms = times.filter((t) => t.at >= from && t.at <= to).map((t) => t.ms).sort((a, b) => a - b);
    if (ms.length) m.serverP99 = quantile(ms, 0.99);
  }
}

const sortedLatencies = (m: Measured) => [...m.victim.latencies].sort((a, b) => a - b);

/** The two tables of one config: the victim's latencies and failures, and where the time went. */
function report(title: string, cases: Case[], results: Measured[][]): void {
  const soloP99 = median(results[0]!.map((m) => quantile(sortedLatencies(m), 0.99)));
  const serverP99 = (ms: Measured[]) => median(ms.map((m) => m.serverP99 ?? NaN));
  const soloServerP99 = serverP99(results[0]!);
  const latencyRows: string[][] = [];
  const costRows: string[][] = [];
  cases.forEach((c, i) => {
    const ms = results[i]!;
    const sorted = ms.map(sortedLatencies);
    const p99s = sorted.map((s) => quantile(s, 0.99));
    const p99 = median(p99s);
    const failed = ms.reduce((n, m) => n + failuresOf(m.victim), 0);
    const sent = ms.reduce((n, m) => n + m.victim.latencies.length + failuresOf(m.victim), 0);
    const ratios = p99s.map((p) => p / soloP99);
    const failures = ms.flatMap((m) => Object.entries({ ...m.victim.statuses, ...m.victim.errors }).map(([k, n]) => `${k} ×${n}${m.victim.bodies[k] ? ` ${m.victim.bodies[k]}` : ''}`));
    latencyRows.push([
      c.name,
      median(sorted.map((s) => quantile(s, 0.5))).toFixed(2),
      p99.toFixed(2),
      quantile(sorted.flat().sort((a, b) => a - b), 0.999).toFixed(2),
      `${failed} / ${sent}`,
      i === 0 ? '1.00' : `**${(p99 / soloP99).toFixed(2)}** (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
      i === 0 ? `${serverP99(ms).toFixed(2)}` : `${serverP99(ms).toFixed(2)} (${(serverP99(ms) / soloServerP99).toFixed(2)})`,
      failures.join('; '),
    ]);
    const cores = (f: (m: Measured) => number) => median(ms.map(f)).toFixed(2);
    costRows.push([
      c.name,
      `${cores((m) => m.kernelCores)} / ${cores((m) => m.victimCores)} / ${cores((m) => m.attackerCores)}`,
      `${cores((m) => m.serverCores)} + ${cores((m) => m.victim.cpuMs / 1000 / SECONDS)} + ${cores((m) => m.attacker.cpuMs / 1000 / SECONDS)}`,
      cores((m) => m.otherCores),
      median(ms.map((m) => m.lagMaxMs)).toFixed(0),
      `${Math.round(median(ms.map((m) => m.kernelWaited)) * 100)} % / ${Math.round(median(ms.map((m) => m.clientWaited)) * 100)} %`,
      median(ms.map((m) => quantile([...m.victim.sendLags].sort((a, b) => a - b), 0.99))).toFixed(1),
      `${(median(ms.map((m) => m.coolDownMs)) / 1000).toFixed(1)}${purgedText(ms)}`,
      c.attacks.length ? outcomesText(ms) || 'none answered while it ran' : '',
    ]);
  });
  const rounds = `medians of ${results[0]!.length} interleaved rounds of ${SECONDS} s`;
  printGrid(`${title}: the victim at ${RATE} req/s, open loop (${rounds}; p99.9 of every round's requests together)`, ['case', 'p50 ms', 'p99 ms', 'p99.9 ms', 'victim failed / sent', 'p99 vs solo (rounds)', "server's own p99 ms, access log (vs solo)", 'failures'], latencyRows);
  printGrid(
    `${title}: where the time went (${rounds})`,
    ['case', 'cores: kernel / victim isolates / attacker isolates', 'cores: server + victim client + attack clients', 'other load (cores)', 'kernel event-loop stall, max ms (beyond its 10 ms timer)', 'waiting for a CPU: kernel / victim client', "victim client's send lag p99 ms", 'cool-down s', "attacker's requests got"],
    costRows,
  );
}

async function runConfig(title: string, processes: number, cases: Case[], node: string, rounds: number): Promise<void> {
  const sink = await child('sink.ts', [], LOWEST_PRIORITY);
  const children: ChildProcess[] = [sink.proc];
  const adminPort = await freePort();
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const { config, files } = serverSetup(processes, `http://127.0.0.1:${sink.ready.port as number}`);
  let svc: (Running & { dir: string }) | undefined;
  try {
    svc = await startSvcCli(config, files, '/t/victim/work', undefined, { SVC_ADMIN_PORT: String(adminPort) }, node);
    const victim = await child('open-loop.ts', [svc.url, '/t/victim/work', String(RATE), ORDER]);
    const attacker = await child('attacker.ts', [svc.url], LOWEST_PRIORITY);
    children.push(victim.proc, attacker.proc);
    // The attackers' services deploy beside the victim's: wait until the last tenant's answer, and the server is quiet.
    for (let i = 0; i < 100 && (await fetch(`${svc.url}/t/${ALL_ATTACKER}/flood`, { method: 'POST', body: ORDER, headers: { 'content-type': 'application/json' } })).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    const dir = svc.dir;
    const purge = () => purgeQueued(node, dir);
    await coolDown(svc, adminUrl, purge);
    await victim.ask<Round>({ run: { seconds: WARM_UP_SECONDS } });

    const results: Measured[][] = cases.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < cases.length; k++) {
        const i = (round + k) % cases.length;
        results[i]!.push(await measure(cases[i]!, svc, purge, adminUrl, victim, attacker, sink.proc.pid!));
      }
    }
    readServerTimes(join(dir, 'server.log'), results);
    report(title, cases, results);
  } finally {
    await svc?.stop();
    for (const c of children) c.kill();
  }
}

export async function run(): Promise<void> {
  const node = tenantNode();
  if (!node) {
    console.log('\n### Tenants\n\nskipped: tenants need Node 22 or 24, and scripts/node-line.sh 24 found none.');
    return;
  }
  const only = process.env.BENCH_TENANT_ATTACKS?.split(',').filter(Boolean) as AttackName[] | undefined;
  const names = only ?? ATTACK_NAMES;
  const own: Case[] = [
    { name: 'solo', attacks: [] },
    // BENCH_TENANT_SINGLES=0: solo and all at once only (to find which attacks hurt together).
    ...(process.env.BENCH_TENANT_SINGLES === '0' ? [] : names.map((attack) => ({ name: ATTACKS[attack].title, attacks: [{ tenant: attackerOf(attack), attack }] }))),
    ...(names.length > 1 ? [{ name: 'all attacks at once, by one tenant', attacks: names.map((attack) => ({ tenant: ALL_ATTACKER, attack })) }] : []),
  ];
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  await runConfig(`Tenants, each with its own sandbox process (\`processes: 1\`), Node ${version}`, 1, own, node, ROUNDS);
  // Sharing processes, fair shares decide what the attacker's isolates take from the victim's: solo and everything at once.
  const shared: Case[] = [own[0]!, ...(names.length > 1 ? [own.at(-1)!] : own.slice(1))];
  // Two rounds fewer cases: the suite stays within about 4 minutes.
  const sharedRounds = Number(process.env.BENCH_TENANT_SHARED_ROUNDS ?? Math.min(ROUNDS, 2));
  if (sharedRounds > 0) await runConfig(`Tenants sharing the tenants' processes (\`processes: 0\`, fair shares), Node ${version}`, 0, shared, node, sharedRounds);
}
