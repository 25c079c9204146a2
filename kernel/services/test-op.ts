import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
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
      const file = ['ts', 'js', 'mjs'].map((ext) => join(registry.dir, `${name}.test.${ext}`)).find((f) => existsSync(f));
      if (!file) throw new SvcError('NOT_FOUND', `service '${name}' has no test file (${name}.test.ts beside it)`);
      return runTestProcess(file, configPath());
    },
  };
}

function runTestProcess(file: string, configPath: string): Promise<{ passed: boolean; exitCode: number | null; output: string }> {
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
