/**
 * Issue 16: channel and durable publish throughput with 1, 2 and 3 svc nodes on one PostgreSQL,
 * each node started through the CLI as an operator would, the load spread evenly over the nodes
 * (as a load balancer would), 50 connections in all. On a 2-core machine that also runs the load
 * generator and PostgreSQL, more nodes cannot add cores: these rows show what coordination costs,
 * not how a cluster scales on real hardware.
 */
import pg from 'pg';
import { loadSpread, median, printGrid, processTree, PUBSUB, publishRequest, rounds, startSvcCli, type Load, type Running } from '../lib.ts';
import { HELLO } from '../peers/channel.ts';

const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const NODE_COUNTS = [1, 2, 3];

async function schemaUrl(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => client.end());
}

interface Group {
  nodes: Running[];
  schema: string;
}

export async function run(): Promise<void> {
  const probe = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 1_000 });
  try {
    await probe.connect();
  } catch {
    console.log(`\n### Nodes\n\nPostgreSQL does not answer at ${PG_URL}: skipped.`);
    return;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const groups: Group[] = [];
  try {
    for (const n of NODE_COUNTS) {
      const schema = `svc_bench_nodes_${n}_${process.pid}`;
      const store = await schemaUrl(schema);
      const config = { ...PUBSUB.config, server: { store }, channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] };
      const nodes: Running[] = [];
      // One after the other: the first migrates the schema, the others find it done.
      for (let i = 0; i < n; i++) nodes.push(await startSvcCli(config, { 'hello.ts': HELLO }, '/hello'));
      groups.push({ nodes, schema });
    }
    const pidsOf = (g: Group) => g.nodes.flatMap((r) => processTree(r.pid));
    const channel = (g: Group) => () => loadSpread(g.nodes.map((r) => `${r.url}/hello`), { connections: 50 }, pidsOf(g));
    const publish = (g: Group) => () => {
      const reqs = g.nodes.map((r) => publishRequest(r.url, 'B', true, '/bench/flow'));
      return loadSpread(reqs.map((r) => r.url), { connections: 50, method: reqs[0]!.method, body: reqs[0]!.body, headers: reqs[0]!.headers }, pidsOf(g));
    };
    const cases = [...groups.map(channel), ...groups.map(publish)];
    const results = await rounds(cases);
    const names = [...NODE_COUNTS.map((n) => `channel GET /hello, ${n} node${n > 1 ? 's' : ''}`), ...NODE_COUNTS.map((n) => `durable publish (variant B), ${n} node${n > 1 ? 's' : ''}`)];
    const rows = results.map((ls: Load[], i) => {
      const m = (f: (l: Load) => number) => median(ls.map(f));
      const base = median(results[i < NODE_COUNTS.length ? 0 : NODE_COUNTS.length]!.map((l) => l.rps));
      const errs = ls.reduce((n, l) => n + l.non2xx + l.errors, 0);
      return [
        names[i]!,
        String(Math.round(m((l) => l.rps))),
        (m((l) => l.rps) / base).toFixed(2),
        String(m((l) => l.p50)),
        String(m((l) => l.p99)),
        m((l) => l.cost!.serverUs).toFixed(0),
        m((l) => l.cost!.otherCores).toFixed(2) + (errs ? `; non-2xx + errors: ${errs}` : ''),
      ];
    });
    printGrid(`Nodes on one PostgreSQL, 50 connections spread over the nodes (medians of ${results[0]!.length} interleaved rounds)`, ['case', 'req/s', 'vs 1 node', 'p50 ms', 'p99 ms', 'server CPU µs/req (all nodes)', 'other load (cores)'], rows);
  } finally {
    for (const g of groups) for (const r of g.nodes) await r.stop();
    for (const g of groups) await dropSchema(g.schema).catch(() => undefined);
  }
}
