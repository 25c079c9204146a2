import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { SvcError } from '../errors.ts';
import type { ControlOp } from '../plugin.ts';
import type { ServiceRegistry } from './registry.ts';

/**
 * `services.test` (the Dashboard's Run tests; the platform's): runs a service's own test file
 * (`<name>.test.ts` beside it) as `svc test FILE` would, in a process of its own, and answers its
 * exit code and output. A process, not this one: a test file is the author's code and runs
 * outside the sandbox (docs/developing.md), so it never runs in the kernel, and not for a
 * tenant's administrators (their tests would run on the server with no sandbox around them).
 */
const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
/** Longest a run may take; its tests have 30 s each. */
const RUN_TIMEOUT_MS = 120_000;
/** Output kept of a run (its end, where the summary is). */
const MAX_OUTPUT = 64 * 1024;

const testArgs = z.object({ name: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_-]{0,99}$/, "a platform service's name").describe('The service whose test file runs.') }).strict();

export function serviceTestOp(registry: ServiceRegistry, configPath: () => string): ControlOp<z.infer<typeof testArgs>> {
  return {
    op: 'services.test',
    readOnly: true,
    args: testArgs,
    handler: async ({ name }) => {
      const file = testFileOf(registry.dir, name);
      if (!file) throw new SvcError('NOT_FOUND', `service '${name}' has no test file (${name}.test.ts beside it)`);
      return runTestProcess(file, configPath());
    },
  };
}

export type TestRun = { passed: boolean; exitCode: number | null; output: string };

/** The service's own test file in `dir` (`<name>.test.ts`, .js or .mjs), or undefined. */
export function testFileOf(dir: string, name: string): string | undefined {
  return ['ts', 'js', 'mjs'].map((ext) => join(dir, `${name}.test.${ext}`)).find((f) => existsSync(f));
}

/**
 * The test gate of an upload: the service's own tests run against a version not yet deployed. The
 * services directory is copied to a temporary one with the candidate in its file's place, so the
 * test file finds it (and anything else it imports) beside it as `svc test` would; the copy goes
 * afterwards. Undefined when the service has no test file.
 */
export async function testCandidate(dir: string, file: string, source: string, configPath: string, name: string): Promise<TestRun | undefined> {
  const testFile = testFileOf(dir, name);
  if (!testFile) return undefined;
  const copy = mkdtempSync(join(tmpdir(), 'svc-test-gate-'));
  try {
    // Dot files (the registry's own) stay behind.
    cpSync(dir, copy, { recursive: true, filter: (from) => from === dir || !basename(from).startsWith('.') });
    writeFileSync(join(copy, file), source);
    const run = await runTestProcess(join(copy, basename(testFile)), configPath);
    // Paths as the author knows them: the services directory's, not the copy's.
    return { ...run, output: run.output.replaceAll(copy, dir) };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

function runTestProcess(file: string, configPath: string): Promise<TestRun> {
  return new Promise((resolve) => {
    // The kernel's own Node (bin/svc.js brings its loader); no colour codes in what a page shows.
    const child = spawn(process.execPath, [SVC_BIN, 'test', file, '--config', configPath], { env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-MAX_OUTPUT);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      output += `\nstopped: the run took longer than ${RUN_TIMEOUT_MS / 1000} s`;
      child.kill('SIGKILL');
    }, RUN_TIMEOUT_MS);
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ passed: exitCode === 0, exitCode, output: output.replace(/\x1b\[[0-9;]*m/g, '') });
    });
  });
}
