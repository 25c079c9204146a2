/**
 * A benchmark target in its own process, so the load generator does not share its event loop:
 * `bare` is Fastify hello-world; `svc` is a kernel started from a config file.
 * Prints `READY <url> <pid,pid,...>` once it listens.
 */
import Fastify from 'fastify';
import pino from 'pino';
import { Kernel } from '../kernel/kernel.ts';

const [kind, configPath] = process.argv.slice(2);

if (kind === 'bare') {
  const app = Fastify();
  app.get('/hello', async () => ({ hello: 'world' }));
  // A POST with a small JSON body and answer: the HTTP-only floor of a publish.
  app.post('/echo', async (req) => ({ msg_id: String((req.body as { data?: unknown }).data !== undefined) }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.stdout.write(`READY ${url} ${process.pid}\n`);
} else {
  const kernel = await Kernel.create({ configPath: configPath!, logger: pino({ level: 'silent' }) });
  const url = await kernel.listen();
  process.stdout.write(`READY ${url} ${[process.pid, ...kernel.pool.pids()].join(',')}\n`);
  process.on('SIGTERM', () => void kernel.close().then(() => process.exit(0)));
}
