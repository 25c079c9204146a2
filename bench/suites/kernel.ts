import { load, printTable, rssMb, withBareFastify, withSvc, type Row } from '../lib.ts';

const hello = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ hello: 'world' }) });\n`;

/** Issue 2: the channel path against bare Fastify in the same run. */
export async function run(): Promise<void> {
  const rows: Row[] = [];
  const bare = await withBareFastify(async (t) => {
    const l = await load(`${t.url}/hello`);
    return { l, rss: rssMb(t.pids) };
  });
  rows.push({ name: 'bare Fastify hello-world', load: bare.l, ratio: 1, rssMb: bare.rss });
  for (const workers of [1, 2]) {
    const svc = await withSvc(
      { server: { sandbox: { workers } }, channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] },
      { 'hello.ts': hello },
      async (t) => {
        const l = await load(`${t.url}/hello`);
        return { l, rss: rssMb(t.pids) };
      },
    );
    rows.push({ name: `svc channel → sandboxed service (${workers} sandbox process${workers > 1 ? 'es' : ''})`, load: svc.l, ratio: svc.l.rps / bare.l.rps, rssMb: svc.rss, note: 'RSS: kernel + sandbox processes' });
  }
  printTable('Kernel: channel path vs bare Fastify (goal ≥ 0.6×)', rows, 'vs bare');
}
