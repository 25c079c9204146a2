/**
 * The channel path beside what users would run instead: bare Fastify, svc as an operator starts
 * it (CLI, default config, output redirected to a file) with and without auth + rate limits and
 * at log level warn, and Node-RED running the same trivial flow. Every server in its own
 * process, all started once; rounds interleaved, medians reported.
 */
import { describeProcesses, load, median, printGrid, processTree, rounds, roundSpread, rssMb, startProcess, startSvcCli, THREE_RATE_RULES, type Load, type Running } from '../lib.ts';
import { DOCUMENT_SIZES, jsonBody } from './documents.ts';
import { startNodeRed } from './node-red.ts';
import { standInProgram, type StandInMode } from './standins/program.ts';

const CONNECTIONS = 50;
export const HELLO = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ hello: 'world' }) });\n`;
const BASIC = { authorization: `Basic ${Buffer.from('bench:bench-password-123').toString('base64')}` };

const channel = { name: 'hello', url_path: '/hello', service: 'hello', security: 'none' };
const svcConfigs = {
  plain: { channel_rest: [channel] },
  secured: {
    security: [{ name: 'bench-basic', type: 'basic_auth', username: 'bench', password: 'bench-password-123' }],
    channel_rest: [{ ...channel, security: 'bench-basic', rate_limiting: THREE_RATE_RULES }],
  },
  warn: { server: { log_level: 'warn' }, channel_rest: [channel] },
};

export interface ChannelCase {
  name: string;
  note: string;
  headers?: Record<string, string>;
  /** A JSON body: the case is measured with POST instead of GET. */
  body?: string;
  /** The path measured; /hello when absent. */
  path?: string;
  start: () => Promise<Running>;
  /** Count the server process alone, not its children (bare Fastify's esbuild child is the bench's tsx loader). */
  alone?: boolean;
}

export async function bare(): Promise<Running> {
  const { target, stop } = await startProcess(['bare']);
  return { url: target.url, pid: target.pids[0]!, stop };
}

export async function channelPath(nodeRedDir: string): Promise<void> {
  await compareChannels('Peers: channel path', [
    { name: 'bare Fastify hello-world', note: 'bench/server.ts bare', start: bare, alone: true },
    { name: 'svc, default config (log level info), `security: none`', note: 'CLI, one access-log line per request to a file', start: () => startSvcCli(svcConfigs.plain, { 'hello.ts': HELLO }, '/hello') },
    { name: 'svc, Basic Auth + 3 rate-limit rules', note: 'default config otherwise; limits never reached', headers: BASIC, start: () => startSvcCli(svcConfigs.secured, { 'hello.ts': HELLO }, '/hello', BASIC) },
    { name: 'svc, `security: none`, log level warn', note: 'no access log', start: () => startSvcCli(svcConfigs.warn, { 'hello.ts': HELLO }, '/hello') },
    { name: 'Node-RED: http in → function → http response', note: 'log level warn, editor off', start: () => startNodeRed(nodeRedDir) },
  ]);
}

const standIn = (mode: StandInMode) => ({ SVC_SANDBOX_PROGRAM: standInProgram(mode) });

/**
 * How far the channel path can go with service code in isolated-vm in another process: svc's
 * kernel unchanged, its sandbox processes replaced by stand-ins that run none of svc's sandbox
 * (standins/standin.mjs): one that answers at once (the crossing alone), and one that only hands
 * each batch to an isolate and back (isolated-vm's least). Beside them bare Fastify and svc itself.
 */
export async function channelFloor(): Promise<void> {
  await compareChannels('Floor: the channel path with stand-in sandbox processes', [
    { name: 'bare Fastify hello-world', note: 'bench/server.ts bare', start: bare, alone: true },
    { name: 'svc kernel, stand-in sandbox answering at once', note: 'standins/standin.mjs, echo: the crossing between processes alone', start: () => startSvcCli(svcConfigs.plain, { 'hello.ts': HELLO }, '/hello', undefined, standIn('echo')) },
    { name: 'svc kernel, stand-in sandbox with one isolate', note: 'standins/standin.mjs, isolate: each batch into an isolate and back, no SDK or limits', start: () => startSvcCli(svcConfigs.plain, { 'hello.ts': HELLO }, '/hello', undefined, standIn('isolate')) },
    { name: 'svc, default config (log level info), `security: none`', note: 'CLI, as in the peers suite', start: () => startSvcCli(svcConfigs.plain, { 'hello.ts': HELLO }, '/hello') },
  ]);
}

/** The channel path with a JSON request body: parsed by Fastify, or by svc's kernel (and again in the sandbox). */
export async function jsonBodyPath(): Promise<void> {
  for (const bytes of DOCUMENT_SIZES) {
    const body = jsonBody(bytes);
    await compareChannels(`Peers: channel path, POST with a ${body.length}-byte JSON body`, [
      { name: 'bare Fastify, JSON body parsed', note: 'bench/server.ts bare, POST /hello', start: bare, alone: true, body },
      { name: 'svc, default config (log level info), `security: none`', note: 'CLI; the service answers without reading the body', start: () => startSvcCli(svcConfigs.plain, { 'hello.ts': HELLO }, '/hello'), body },
    ]);
  }
}

/** The channel path answering with a JSON document: encoded by Fastify, or in svc's sandbox and sent as that text. */
export async function jsonReplyPath(): Promise<void> {
  const services: Record<string, string> = {};
  const channels = DOCUMENT_SIZES.map((size) => {
    services[`doc${size}.ts`] = `import { service } from 'svc/sdk';\nconst doc = ${jsonBody(size)};\nexport default service({ handle: () => doc });\n`;
    return { name: `doc${size}`, url_path: `/doc/${size}`, service: `doc${size}`, security: 'none' };
  });
  for (const size of DOCUMENT_SIZES) {
    const path = `/doc/${size}`;
    await compareChannels(`Peers: channel path, GET answered with a ${jsonBody(size).length}-byte JSON document`, [
      { name: 'bare Fastify, the document encoded per request', note: `bench/server.ts bare, GET ${path}`, start: bare, alone: true, path },
      { name: 'svc, default config (log level info), `security: none`', note: 'CLI; the service returns the document', start: () => startSvcCli({ channel_rest: channels }, services, path), path },
    ]);
  }
}

/**
 * Servers start afresh for every round unless BENCH_REUSE=1: a process's rate depends on where the
 * scheduler happens to put it (bare Fastify moves ±15% from one start to the next on this VM), so
 * a median over several starts says more than rounds on one start.
 */
const FRESH = process.env.BENCH_REUSE !== '1';

/** Measures each case's path (GET /hello unless given) in interleaved rounds; the first case is the baseline (`versus` names it in the heads). */
export async function compareChannels(title: string, cases: ChannelCase[], versus = 'bare'): Promise<void> {
  const live: Array<Running | undefined> = cases.map(() => undefined);
  const idle: number[][] = cases.map(() => []);
  const pidsOf = (i: number) => (cases[i]!.alone ? [live[i]!.pid] : processTree(live[i]!.pid));
  const up = async (i: number) => {
    live[i] = await cases[i]!.start();
    await new Promise((r) => setTimeout(r, 1_000));
    idle[i]!.push(rssMb(pidsOf(i)));
  };
  const down = async (i: number) => {
    const r = live[i];
    live[i] = undefined;
    await r?.stop();
  };
  try {
    if (!FRESH) for (let i = 0; i < cases.length; i++) await up(i);
    const results = await rounds(
      cases.map((c, i) => async () => {
        if (FRESH) await up(i);
        try {
          const pids = pidsOf(i);
          const post = c.body === undefined ? {} : { method: 'POST' as const, body: c.body, headers: { ...c.headers, 'content-type': 'application/json' } };
          const l = await load(`${live[i]!.url}${c.path ?? '/hello'}`, { connections: CONNECTIONS, headers: c.headers, ...post }, { pids });
          return { l, procs: describeProcesses(pids) };
        } finally {
          if (FRESH) await down(i);
        }
      }),
    );
    const bareRps = median(results[0]!.map((r) => r.l.rps));
    const rows = cases.map((c, i) => {
      const ls = results[i]!.map((r) => r.l);
      const m = (f: (l: Load) => number) => median(ls.map(f));
      const errs = ls.reduce((n, l) => n + l.non2xx + l.errors, 0);
      return [
        c.name,
        String(Math.round(m((l) => l.rps))),
        (m((l) => l.rps) / bareRps).toFixed(2),
        i === 0 ? '' : roundSpread(ls.map((l) => l.rps), results[0]!.map((r) => r.l.rps)),
        String(m((l) => l.p50)),
        String(m((l) => l.p99)),
        `${m((l) => l.cost!.serverUs).toFixed(0)} (${m((l) => l.cost!.mainUs).toFixed(0)})`,
        m((l) => l.cost!.loaderUs).toFixed(0),
        String(Math.round(median(idle[i]!))),
        String(Math.round(m((l) => l.cost!.rssMb))),
        `${c.note}; processes: ${results[i]![0]!.procs}; other load ${m((l) => l.cost!.otherCores).toFixed(2)} cores${errs ? `; non-2xx + errors: ${errs}` : ''}`,
      ];
    });
    printGrid(
      `${title}, ${CONNECTIONS} connections (medians of ${results[0]!.length} interleaved rounds${FRESH ? ', each server started afresh per round' : ''})`,
      ['case', 'req/s', `vs ${versus}`, `vs ${versus}, one round (lowest–highest)`, 'p50 ms', 'p99 ms', 'server CPU µs/req (main process)', 'load-gen CPU µs/req', 'RSS idle MB', 'RSS load MB', 'note'],
      rows,
    );
  } finally {
    for (let i = 0; i < cases.length; i++) await down(i);
  }
}
