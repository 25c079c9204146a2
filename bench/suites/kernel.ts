import { load, printTable, ROUNDS, rssMb, withBareFastify, withSvc, type Load, type Row } from '../lib.ts';

const hello = `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ hello: 'world' }) });\n`;

type Measured = { l: Load; rss: number };
const better = (a: Measured | undefined, b: Measured) => (!a || b.l.rps > a.l.rps ? b : a);

/** Issue 2: the channel path against bare Fastify in the same run (rounds interleaved, best kept). */
export async function run(): Promise<void> {
  let bare: Measured | undefined;
  const svc: Array<Measured | undefined> = [undefined, undefined];
  for (let round = 0; round < ROUNDS; round++) {
    bare = better(bare, await withBareFastify(async (t) => ({ l: await load(`${t.url}/hello`), rss: rssMb(t.pids) })));
    for (const workers of [1, 2]) {
      const m = await withSvc(
        { server: { sandbox: { workers } }, channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] },
        { 'hello.ts': hello },
        async (t) => ({ l: await load(`${t.url}/hello`), rss: rssMb(t.pids) }),
      );
      svc[workers - 1] = better(svc[workers - 1], m);
    }
  }
  const rows: Row[] = [{ name: 'bare Fastify hello-world', load: bare!.l, ratio: 1, rssMb: bare!.rss }];
  svc.forEach((m, i) => {
    rows.push({ name: `svc channel → sandboxed service (${i + 1} sandbox process${i ? 'es' : ''})`, load: m!.l, ratio: m!.l.rps / bare!.l.rps, rssMb: m!.rss, note: 'RSS: kernel + sandbox processes' });
  });
  printTable(`Kernel: channel path vs bare Fastify (goal ≥ 0.6×; best of ${ROUNDS} interleaved rounds)`, rows, 'vs bare');
}
