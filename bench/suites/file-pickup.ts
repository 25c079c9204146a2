import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
 */
const FILES = Number(process.env.BENCH_FILES ?? 2_000);
const CONCURRENCY = Number(process.env.BENCH_FILES_CONCURRENCY ?? 16);
const BARE = fileURLToPath(new URL('../peers/file-bare.ts', import.meta.url));
const CONTENT = `id;item;qty\n${Array.from({ length: 12 }, (_, i) => `${i};pen-${i};${i + 1}`).join('\n')}\n`;
const TRIVIAL = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ bytes: ctx.rawBody.length }) });\n`;

/** FILES files written in a staging folder beside `folder` (same file system), to be renamed in at once. */
function stage(folder: string): string {
  const staging = `${folder}.staging`;
  mkdirSync(staging, { recursive: true });
  for (let i = 0; i < FILES; i++) writeFileSync(join(staging, `f${i}.csv`), CONTENT);
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
}
