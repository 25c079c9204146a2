import { interleaved, load, printTable, withSvc, type Row } from '../lib.ts';

const hello = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ hello: ctx.user?.username ?? 'anonymous' }) });\n`;

/** Issue 4: authenticated channels against the same channel with `security: none`, in one server. */
export async function run(): Promise<void> {
  const config = {
    security: [
      { name: 'bench-basic', type: 'basic_auth', username: 'bench', password: 'bench-password-123' },
      { name: 'bench-key', type: 'apikey', key: 'bench-api-key-0123456789' },
    ],
    channel_rest: [
      { name: 'open', url_path: '/open', service: 'hello', security: 'none' },
      { name: 'basic', url_path: '/basic', service: 'hello', security: 'bench-basic' },
      { name: 'key', url_path: '/key', service: 'hello', security: 'bench-key' },
    ],
  };
  const rows: Row[] = await withSvc(config, { 'hello.ts': hello }, async (t) => {
    const [open, basic, key] = await interleaved([
      () => load(`${t.url}/open`),
      () => load(`${t.url}/basic`, { headers: { authorization: `Basic ${Buffer.from('bench:bench-password-123').toString('base64')}` } }),
      () => load(`${t.url}/key`, { headers: { 'x-api-key': 'bench-api-key-0123456789' } }),
    ]);
    return [
      { name: 'channel, security: none', load: open!, ratio: 1 },
      { name: 'channel, Basic Auth (verified cache)', load: basic!, ratio: basic!.rps / open!.rps },
      { name: 'channel, API key (verified cache)', load: key!, ratio: key!.rps / open!.rps },
    ];
  });
  printTable('Security: authenticated channels vs none (goal ≥ 0.9×)', rows, 'vs none');
}
