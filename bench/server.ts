/**
 * A benchmark target in its own process, so the load generator does not share its event loop:
 * `bare` is Fastify hello-world; `svc` is a kernel started from a config file.
 * Prints `READY <url> <pid,pid,...>` once it listens.
 */
import Fastify from 'fastify';
import pino from 'pino';

const [kind, configPath] = process.argv.slice(2);

if (kind === 'upstream') {
  // The external system of the outgoing benchmarks: a small JSON answer, or one held for a while.
  const { createServer } = await import('node:http');
  let held = 0;
  const server = createServer((req, res) => {
    if (req.url === '/held') return void res.end(String(held));
    if (req.url?.startsWith('/hold')) {
      held++;
      setTimeout(() => {
        held--;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"held":true}');
      }, Number(process.env.BENCH_HOLD_MS ?? 4000));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":1,"name":"Ada Lovelace","tier":"gold"}');
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`READY http://127.0.0.1:${(server.address() as { port: number }).port} ${process.pid}\n`);
} else if (kind === 'proxy') {
  // The hand-rolled baseline: a bare Fastify handler calling the same upstream with undici.
  const { Pool } = await import('undici');
  const upstream = new Pool(configPath!, { connections: 128 });
  const app = Fastify();
  app.get('/call', async () => {
    const res = await upstream.request({ path: '/item/1', method: 'GET' });
    return res.body.json();
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`READY ${url} ${process.pid}\n`);
} else if (kind === 'sql-pg' || kind === 'sql-mysql') {
  // The SQL suite's baseline: a bare Fastify route running the same one-row query on a bare pool of the same size.
  const app = Fastify();
  if (kind === 'sql-pg') {
    const { default: pg } = await import('pg');
    const pool = new pg.Pool({ connectionString: configPath!, max: Number(process.env.BENCH_SQL_POOL ?? 10) });
    app.get('/sql', async () => (await pool.query('SELECT $1::int AS n', [1])).rows);
  } else {
    const { default: mysql } = await import('mysql2/promise');
    const pool = mysql.createPool({ uri: configPath!, connectionLimit: Number(process.env.BENCH_SQL_POOL ?? 10) });
    app.get('/sql', async () => (await pool.execute('SELECT ? AS n', [1]))[0]);
  }
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write(`READY ${url} ${process.pid}\n`);
} else if (kind === 'bare') {
  const app = Fastify();
  app.get('/hello', async () => ({ hello: 'world' }));
  // The same answer to a JSON body, which Fastify parses first (the JSON-body rows of the peers suite).
  app.post('/hello', async (req) => ({ hello: req.body === undefined ? 'nobody' : 'world' }));
  // A JSON document as the answer, encoded by Fastify's default serializer (JSON.stringify) per request.
  const { jsonBody, DOCUMENT_SIZES } = await import('./peers/documents.ts');
  for (const size of DOCUMENT_SIZES) {
    const doc = JSON.parse(jsonBody(size)) as unknown;
    app.get(`/doc/${size}`, async () => doc);
  }
  // A POST with a small JSON body and answer: the HTTP-only floor of a publish.
  app.post('/echo', async (req) => ({ msg_id: String((req.body as { data?: unknown }).data !== undefined) }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  // An orderly exit, so that BENCH_PROF's --cpu-prof writes its profile.
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write(`READY ${url} ${process.pid}\n`);
} else {
  // Imported here only: the bare target's memory is Fastify's alone.
  const { Kernel } = await import('../kernel/kernel.ts');
  const { sandboxSpawner } = await import('../kernel/sandbox/process.ts');
  const kernel = await Kernel.create({ configPath: configPath!, logger: pino({ level: 'silent' }), env: { SVC_ADMIN_PORT: '0', ...process.env } });
  const url = await kernel.listen();
  // The kernel first (suites read its own figures from pids[0]), then its sandbox processes and the spawner that starts them.
  process.stdout.write(`READY ${url} ${[process.pid, ...kernel.pool.pids(), ...[sandboxSpawner.pid()].filter((pid) => pid !== undefined)].join(',')}\n`);
  process.on('SIGTERM', () => void kernel.close().then(() => process.exit(0)));
}
