/**
 * Durable publish of this working tree against a git ref, in one run: `npm run bench:ab -- REF`
 * (default HEAD~1). The ref is checked out into a temporary worktree sharing this node_modules;
 * both servers run at once and the rounds interleave, so each round gives a paired ratio
 * (this tree / the ref) that a drifting VM moves less than it moves separate runs.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as here from './lib.ts';
import { publishAlone } from './peers/publish.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const ref = process.argv[2] ?? 'HEAD~1';
const commit = execFileSync('git', ['rev-parse', '--short', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
const dir = join(mkdtempSync(join(tmpdir(), 'svc-ab-')), 'tree');
execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: root, stdio: 'ignore' });
try {
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const there = (await import(pathToFileURL(join(dir, 'bench', 'lib.ts')).href)) as typeof here;
  await compare(there, commit);
} finally {
  execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
  rmSync(join(dir, '..'), { recursive: true, force: true });
}

async function compare(there: typeof here, commit: string): Promise<void> {
  const servers: Record<string, Awaited<ReturnType<typeof here.startSvcCli>>> = {};
  try {
    // The ref's server is its own CLI and config; both are measured by this tree's bench code.
    servers[commit] = await there.startSvcCli(there.PUBSUB.config, {}, '/svc/pubsub/openapi.json');
    servers['this tree'] = await here.startSvcCli(here.PUBSUB.config, {}, '/svc/pubsub/openapi.json');
    const names = Object.keys(servers);
    const cases: Array<{ name: string; run: () => Promise<here.Load> }> = [];
    for (const variant of ['A', 'B'] as const) {
      for (const name of names) cases.push({ name: `${name}, variant ${variant}`, run: () => publishAlone(servers[name]!, variant) });
    }
    // BENCH_ON_OWN_CORES=1: both servers on CPU 0, the load on another, so the two share one
    // core's conditions rather than racing the load generator for the machine's.
    const pinned = process.env.BENCH_ON_OWN_CORES === '1';
    const measured = pinned ? await here.onOwnCores(Object.values(servers).flatMap((s) => here.processTree(s.pid)), () => here.rounds(cases.map((c) => c.run))) : await here.rounds(cases.map((c) => c.run));
    if (typeof measured === 'string') throw new Error(`BENCH_ON_OWN_CORES: ${measured}`);
    const results = measured;
    const rows = cases.map((c, i) => {
      const ls = results[i]!;
      const paired = i % 2 === 1 ? ls.map((l, r) => l.rps / results[i - 1]![r]!.rps) : undefined;
      return [
        c.name,
        String(Math.round(here.median(ls.map((l) => l.rps)))),
        paired ? here.median(paired).toFixed(2) : '',
        paired ? paired.map((x) => x.toFixed(2)).join(' ') : '',
        here.median(ls.map((l) => l.cost!.serverUs)).toFixed(0),
      ];
    });
    here.printGrid(
      `Durable publish, this tree vs ${commit}: 50 publishers, medians of ${results[0]!.length} interleaved rounds${pinned ? ', servers on CPU 0' : ''}`,
      ['case', 'msg/s', 'this tree / ref (median of rounds)', 'each round', 'server CPU µs/msg'],
      rows,
    );
  } finally {
    for (const svc of Object.values(servers)) await svc.stop();
  }
}
