/**
 * What a team would write without svc, in its own process, for the SFTP bench (bench/suites/sftp.ts):
 *   serve PORT ROOT POOL BYTES   a Fastify route GET /sftp that puts BYTES bytes to ROOT/<name> and
 *                                gets them back with ssh2-sftp-client, on POOL sessions opened at
 *                                start, one operation per session at a time (as svc's pool).
 * The server: SVC_BENCH_SFTP_{HOST,PORT,USER,KEY} (defaults: the test sshd, key auth); its host
 * key (SVC_BENCH_SFTP_HOST_KEY, `ssh-ed25519 AAAA…`) is pinned, as svc pins it.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import SftpClient from 'ssh2-sftp-client';

const [mode, port, root, pool, bytes] = process.argv.slice(2);
if (mode !== 'serve') {
  console.error('usage: sftp-bare.ts serve PORT ROOT POOL BYTES');
  process.exit(2);
}
const hostKey = Buffer.from(process.env.SVC_BENCH_SFTP_HOST_KEY!.split(' ')[1]!, 'base64');
const options = {
  host: process.env.SVC_BENCH_SFTP_HOST ?? '127.0.0.1',
  port: Number(process.env.SVC_BENCH_SFTP_PORT ?? 2222),
  username: process.env.SVC_BENCH_SFTP_USER ?? 'svcsftp',
  privateKey: readFileSync(process.env.SVC_BENCH_SFTP_KEY ?? '/tmp/svc-test-servers/client_key'),
  hostVerifier: (key: Buffer) => key.equals(hostKey),
};

const free: SftpClient[] = [];
const waiting: Array<(c: SftpClient) => void> = [];
for (let i = 0; i < Number(pool); i++) {
  const client = new SftpClient();
  await client.connect(options);
  free.push(client);
}

async function withSession<T>(work: (c: SftpClient) => Promise<T>): Promise<T> {
  const client = free.pop() ?? (await new Promise<SftpClient>((resolve) => waiting.push(resolve)));
  try {
    return await work(client);
  } finally {
    const next = waiting.shift();
    if (next) next(client);
    else free.push(client);
  }
}

// Names cycle over 256 per process: no two requests in flight write the same file.
const content = Buffer.alloc(Number(bytes), 'x');
const prefix = randomBytes(3).toString('hex');
let n = 0;
const app = Fastify();
app.get('/sftp', async () => {
  const path = `${root}/bare-${prefix}-${n++ % 256}.txt`;
  await withSession((c) => c.put(content, path));
  const got = (await withSession((c) => c.get(path))) as Buffer;
  if (got.length !== content.length) throw new Error(`read ${got.length} bytes of ${content.length}`);
  return { size: got.length };
});
await app.listen({ port: Number(port), host: '127.0.0.1' });
