import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, spawnLogged, startSvcCli, type Running } from '../lib.ts';
import { compareChannels } from '../peers/channel.ts';
import { SERVERS_DIR, SFTP, sftpFolder, sftpKeys, testServers } from '../../test/helpers/servers.ts';

/**
 * SFTP connector (the test sshd, test/helpers/servers.ts, started when down): an HTTP channel
 * whose service puts a 4 KiB file and gets it back through `sftp(name)`, against a bare Fastify
 * route doing the same put + get with ssh2-sftp-client (bench/peers/sftp-bare.ts, own process),
 * both on a pool of POOL key-authenticated sessions with the host key pinned. svc is measured
 * with its default atomic put (temporary name, then rename) and with `atomic: false`, the bare
 * client's plain write. Goal: svc's default ≥ 0.6× of bare.
 */
const POOL = Number(process.env.BENCH_SFTP_POOL ?? 4);
const BYTES = Number(process.env.BENCH_SFTP_BYTES ?? 4096);
const BARE = new URL('../peers/sftp-bare.ts', import.meta.url).pathname;

/** `atomic` as the put's option; names cycle per isolate (a random prefix each), as the bare route's. */
const service = (atomic: boolean) => `import { service, sftp } from 'svc/sdk';
const partner = sftp('bench');
const content = 'x'.repeat(${BYTES});
const prefix = Math.random().toString(36).slice(2, 8);
let n = 0;
export default service({ async handle() {
  const path = 'svc-' + prefix + '-' + (n++ % 256) + '.txt';
  await partner.put(path, content, { atomic: ${atomic} });
  const got = await partner.get(path);
  if (got.length !== content.length) throw new Error('read ' + got.length + ' bytes');
  return { size: got.length };
} });
`;

async function bare(root: string, hostKey: string): Promise<Running> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { ...process.env, SVC_BENCH_SFTP_HOST_KEY: hostKey, SVC_BENCH_SFTP_KEY: join(SERVERS_DIR, 'client_key') };
  const p = await spawnLogged(['--import', 'tsx', BARE, 'serve', String(port), root, String(POOL), String(BYTES)], { cwd: process.cwd(), env, log: '/dev/null', probe: `${url}/sftp` });
  return { url, ...p };
}

export async function run(): Promise<void> {
  await testServers();
  const folder = sftpFolder('bench');
  const { hostKey } = sftpKeys();
  const config = {
    server: { log_level: 'warn' },
    sftp_connection: [{ name: 'bench', host: SFTP.host, port: SFTP.port, username: SFTP.username, private_key_file: join(SERVERS_DIR, 'client_key'), host_key: hostKey, root: folder.remote, pool_size: POOL }],
    channel_rest: [
      { name: 'atomic', url_path: '/sftp', service: 'atomic', security: 'none' },
      { name: 'plain', url_path: '/plain', service: 'plain', security: 'none' },
    ],
  };
  const services = { 'atomic.ts': service(true), 'plain.ts': service(false) };
  try {
    await compareChannels(
      `SFTP: put + get of a ${BYTES}-byte file per request, ${POOL} sessions (goal ≥ 0.6×)`,
      [
        { name: 'bare Fastify + ssh2-sftp-client put + get (baseline)', note: 'bench/peers/sftp-bare.ts, its own process', path: '/sftp', start: () => bare(folder.remote, hostKey), alone: true },
        { name: 'svc channel → service → sftp(bench).put + get (atomic put, the default)', note: 'CLI, log level warn', path: '/sftp', start: () => startSvcCli(config, services, '/sftp') },
        { name: 'svc, the same with `atomic: false`', note: 'CLI, log level warn', path: '/plain', start: () => startSvcCli(config, services, '/plain') },
      ],
      'baseline',
    );
  } finally {
    rmSync(folder.local, { recursive: true, force: true });
  }
}
