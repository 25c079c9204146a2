import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

/** Client libraries a config may never name: no bundled plugin may load one at import. */
const DRIVERS = ['redis', 'mysql2', 'mqtt', 'amqplib', 'nodemailer', 'imapflow', 'mailparser', 'ssh2-sftp-client', 'ssh2', 'pino-pretty'];

/** Runs a script in a fresh Node with the TypeScript loader; returns what it printed as JSON. */
function inFreshNode(script: string): unknown {
  const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  if (out.status !== 0) throw new Error(`exit ${out.status}: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').at(-1)!);
}

const loadedDrivers = `
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const loaded = (names) => names.filter((n) => Object.keys(require.cache).some((k) => k.includes('/node_modules/' + n + '/')));
`;

describe('onFirstUse: client libraries are loaded by their first use, not by importing the plugins', () => {
  it('importing every bundled plugin and the CLI loads none of them', () => {
    const loaded = inFreshNode(`${loadedDrivers}
      const { findBundledPluginFiles } = await import('./kernel/plugin-loader.ts');
      for (const file of findBundledPluginFiles()) await import(file);
      await import('./cli/dev.ts');
      console.log(JSON.stringify(loaded(${JSON.stringify(DRIVERS)})));`);
    expect(loaded).toEqual([]);
  });

  it('loads the library at the first call, once, and hands back the same module', () => {
    const seen = inFreshNode(`${loadedDrivers}
      const { onFirstUse } = await import('./sdk/plugin/index.ts');
      const mysql = onFirstUse(import.meta.url, 'mysql2');
      const before = loaded(['mysql2']);
      const first = mysql();
      console.log(JSON.stringify({ before, after: loaded(['mysql2']), same: first === mysql(), pool: typeof first.createPool }));`);
    expect(seen).toEqual({ before: [], after: ['mysql2'], same: true, pool: 'function' });
  });
});
