import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, printGrid, roundSpread, rounds, startSvcCli } from '../lib.ts';

/**
 * File pickup (local folder). FILES small files (a 200-byte CSV each) appear in a folder at once;
 * measured until every one was read, its service ran and it is in done/: svc (channel_file,
 * polling every 50 ms, stable: polls 1, a trivial service reading the bytes) against a bare
 * node:fs loop in its own process (list, lstat, read, rename each: bench/peers/file-bare.ts).
 * Files per second. svc's time includes waiting for its next poll (at most 50 ms) and a claim
 * in the store per file, which is what exactly-once costs.
 * SFTP rows: SFTP_FILES files in a folder of the test servers' sshd (scripts/test-servers.sh,
 * 127.0.0.1:2222), svc (channel_file on an sftp_connection) against a bare ssh2-sftp-client
 * session in its own process (list, get, rename each: bench/peers/sftp-pickup-bare.ts). Skipped with a
 * message when that sshd does not answer.
 */
const FILES = Number(process.env.BENCH_FILES ?? 2_000);
const CONCURRENCY = Number(process.env.BENCH_FILES_CONCURRENCY ?? 16);
const BARE = fileURLToPath(new URL('../peers/file-bare.ts', import.meta.url));
const SFTP_BARE = fileURLToPath(new URL('../peers/sftp-pickup-bare.ts', import.meta.url));
const SFTP_FILES = Number(process.env.BENCH_SFTP_FILES ?? 500);
const SERVERS = process.env.SVC_TEST_SERVERS ?? '/tmp/svc-test-servers';
const SFTP = { host: '127.0.0.1', port: 2222, username: 'svcsftp', password: 'svc-test' };
const CONTENT = `id;item;qty\n${Array.from({ length: 12 }, (_, i) => `${i};pen-${i};${i + 1}`).join('\n')}\n`;
const TRIVIAL = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ bytes: ctx.rawBody.length }) });\n`;

/** FILES files written in a staging folder beside `folder` (same file system), to be renamed in at once. */
function stage(folder: string, files = FILES): string {
  const staging = `${folder}.staging`;
  mkdirSync(staging, { recursive: true });
  for (let i = 0; i < files; i++) writeFileSync(join(staging, `f${i}.csv`), CONTENT);
  return staging;
}

function release(staging: string, folder: string): void {
  for (const name of readdirSync(staging)) renameSync(join(staging, name), join(folder, name));
  rmSync(staging, { recursive: true, force: true });
}

function bare(): number {
  const folder = mkdtempSync(join(tmpdir(), 'svc-bench-files-'));
  try {
    release(stage(folder), folder);
    const r = spawnSync(process.execPath, ['--import', 'tsx', BARE, folder], { encoding: 'utf8' });
    const m = /ELAPSED ([\d.]+) (\d+)/.exec(r.stdout);
    if (!m || Number(m[2]) !== FILES) throw new Error(`bare loop failed: ${r.stdout}${r.stderr}`);
    return (FILES / Number(m[1])) * 1000;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

async function svc(): Promise<number> {
  const folder = mkdtempSync(join(tmpdir(), 'svc-bench-files-'));
  const config = {
    channel_rest: [{ name: 'hello', url_path: '/hello', service: 'trivial', security: 'none' }],
    channel_file: [{ name: 'bench', source: { local: { path: folder } }, service: 'trivial', pattern: '*.csv', poll: { every: '50ms' }, stable: { polls: 1 }, concurrency: CONCURRENCY, max_files_per_poll: 100_000 }],
  };
  const running = await startSvcCli(config, { 'trivial.ts': TRIVIAL }, '/hello');
  try {
    const staging = stage(folder);
    const started = performance.now();
    release(staging, folder);
    mkdirSync(join(folder, 'done'), { recursive: true });
    while (readdirSync(join(folder, 'done')).length < FILES) await new Promise((r) => setTimeout(r, 5));
    return (FILES / (performance.now() - started)) * 1000;
  } finally {
    await running.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}

/** A fresh folder in the sshd user's home, owned by that user (it renames and creates done/ in it). */
function sftpFolder(): { remote: string; local: string } {
  const home = join(SERVERS, 'sftp-home');
  const local = mkdtempSync(join(home, 'bench-'));
  const id = (flag: string) => Number(execFileSync('id', [flag, SFTP.username]).toString().trim());
  chownSync(local, id('-u'), id('-g'));
  return { remote: local.slice(home.length + 1), local };
}

function sshdAnswers(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(SFTP.port, SFTP.host);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

function sftpBare(): number {
  const f = sftpFolder();
  try {
    release(stage(f.local, SFTP_FILES), f.local);
    const r = spawnSync(process.execPath, ['--import', 'tsx', SFTP_BARE, SFTP.host, String(SFTP.port), SFTP.username, SFTP.password, f.remote], { encoding: 'utf8' });
    const m = /ELAPSED ([\d.]+) (\d+)/.exec(r.stdout);
    if (!m || Number(m[2]) !== SFTP_FILES) throw new Error(`bare SFTP loop failed: ${r.stdout}${r.stderr}`);
    return (SFTP_FILES / Number(m[1])) * 1000;
  } finally {
    rmSync(f.local, { recursive: true, force: true });
  }
}

async function sftpSvc(): Promise<number> {
  const f = sftpFolder();
  const [type, key] = readFileSync(join(SERVERS, 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(' ');
  const config = {
    channel_rest: [{ name: 'hello', url_path: '/hello', service: 'trivial', security: 'none' }],
    sftp_connection: [{ name: 'bench', ...SFTP, host_key: `${type} ${key}` }],
    channel_file: [{ name: 'bench', source: { sftp: { connection: 'bench', path: f.remote } }, service: 'trivial', pattern: '*.csv', poll: { every: '50ms' }, stable: { polls: 1 }, concurrency: CONCURRENCY, max_files_per_poll: 100_000 }],
  };
  const running = await startSvcCli(config, { 'trivial.ts': TRIVIAL }, '/hello');
  try {
    const staging = stage(f.local, SFTP_FILES);
    const started = performance.now();
    release(staging, f.local);
    const done = join(f.local, 'done');
    while (!existsSync(done) || readdirSync(done).length < SFTP_FILES) await new Promise((r) => setTimeout(r, 5));
    return (SFTP_FILES / (performance.now() - started)) * 1000;
  } finally {
    await running.stop();
    rmSync(f.local, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  const [b, s] = await rounds<number>([async () => bare(), svc]);
  const mb = median(b!);
  const ms = median(s!);
  printGrid(
    `File pickup (local folder): ${FILES} files of ${CONTENT.length} bytes appear at once; until each was read, run and moved to done/ (medians of ${b!.length} interleaved rounds)`,
    ['case', 'files/s', 'vs bare', 'note'],
    [
      ['bare node:fs loop: list, lstat, read, rename each', String(Math.round(mb)), '1.00', `own process; rounds ${b!.map(Math.round).join(', ')}`],
      ['svc channel_file → trivial service → done/', String(Math.round(ms)), (ms / mb).toFixed(2), `concurrency ${CONCURRENCY}, poll every 50 ms, claim per file in SQLite; rounds ${roundSpread(s!, b!)}`],
    ],
  );
  if (!(await sshdAnswers())) {
    console.log(`\n(file pickup over SFTP skipped: no sshd answers at ${SFTP.host}:${SFTP.port}; scripts/test-servers.sh starts one)`);
    return;
  }
  const [sb, ss] = await rounds<number>([async () => sftpBare(), sftpSvc]);
  const msb = median(sb!);
  const mss = median(ss!);
  printGrid(
    `File pickup (SFTP, the test servers' sshd on loopback): ${SFTP_FILES} files of ${CONTENT.length} bytes appear at once; until each was read, run and moved to done/ (medians of ${sb!.length} interleaved rounds)`,
    ['case', 'files/s', 'vs bare', 'note'],
    [
      ['bare ssh2-sftp-client session: list, get, rename each', String(Math.round(msb)), '1.00', `own process, one session, one file at a time; rounds ${sb!.map(Math.round).join(', ')}`],
      ['svc channel_file (sftp_connection) → trivial service → done/', String(Math.round(mss)), (mss / msb).toFixed(2), `concurrency ${CONCURRENCY} on one session, poll every 50 ms, claim per file in SQLite; rounds ${roundSpread(ss!, sb!)}`],
    ],
  );
}
