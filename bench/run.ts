/**
 * npm run bench: every benchmark in one run, printing markdown tables. Ratios are always
 * against a baseline measured in the same run (never absolute timings).
 * `npm run bench -- kernel security` runs only the named suites.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const only = process.argv.slice(2);
const want = (name: string) => only.length === 0 || only.includes(name);

/** Suites that are modules with run(). */
const suites: Record<string, () => Promise<{ run: () => Promise<void> }>> = {
  kernel: () => import('./suites/kernel.ts'),
  hop: () => import('./suites/hop.ts'),
  invoke: () => import('./suites/invoke.ts'),
  security: () => import('./suites/security.ts'),
  outgoing: () => import('./suites/outgoing.ts'),
  queue: () => import('./suites/queue.ts'),
  peers: () => import('./suites/peers.ts'),
  'publish-outside': () => import('./suites/publish-outside.ts'),
  floor: () => import('./suites/floor.ts'),
  tracing: () => import('./suites/tracing.ts'),
  memory: () => import('./suites/memory.ts'),
  nodes: () => import('./suites/nodes.ts'),
  cluster: () => import('./suites/cluster.ts'),
  scheduler: () => import('./suites/scheduler.ts'),
  cache: () => import('./suites/cache.ts'),
  amqp: () => import('./suites/amqp.ts'),
  sql: () => import('./suites/sql.ts'),
  mqtt: () => import('./suites/mqtt.ts'),
  smtp: () => import('./suites/smtp.ts'),
  imap: () => import('./suites/imap.ts'),
  'file-pickup': () => import('./suites/file-pickup.ts'),
  sftp: () => import('./suites/sftp.ts'),
  tenants: () => import('./suites/tenants.ts'),
  dashboard: () => import('./suites/dashboard.ts'),
  idle: () => import('./suites/idle.ts'),
};

/** Standalone scripts written per plugin; they print their own tables. */
const scripts: Record<string, string> = {
  'formats-micro': 'formats-micro.ts',
  formats: 'formats-http.ts',
  'rate-limit-micro': 'rate-limit-micro.ts',
  'rate-limit': 'rate-limit-http.ts',
  pubsub: 'pubsub.ts',
};

for (const [name, loadSuite] of Object.entries(suites)) {
  if (!want(name)) continue;
  await (await loadSuite()).run();
}
for (const [name, file] of Object.entries(scripts)) {
  if (!want(name)) continue;
  const path = fileURLToPath(new URL(`./${file}`, import.meta.url));
  if (!existsSync(path)) continue;
  console.log(`\n### ${name}\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', path], { stdio: 'inherit' });
  if (r.status !== 0) console.log(`(${name} failed with exit code ${r.status})`);
}
