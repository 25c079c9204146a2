import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));

export interface CliServer {
  url: string;
  proc: ChildProcess;
  dir: string;
  /** Everything the server printed so far. */
  output(): string;
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** A project directory: config/svc.yaml, services/, data/. Returns its path. */
export function makeProject(config: string, services: Record<string, string> = {}, dir = mkdtempSync(join(tmpdir(), 'svc-e2e-'))): string {
  mkdirSync(join(dir, 'config'), { recursive: true });
  mkdirSync(join(dir, 'services'), { recursive: true });
  writeFileSync(join(dir, 'config', 'svc.yaml'), config);
  for (const [file, code] of Object.entries(services)) writeFileSync(join(dir, 'services', file), code);
  return dir;
}

/**
 * Every server startCli spawned and that still runs. A test that times out while one starts has no
 * handle to stop it, and a server left running would outlive the test run: this process kills
 * whatever is left when it exits.
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

/**
 * Starts `svc start` in a project directory on a free port; resolves once it listens. `detached`
 * makes it a process group leader, as a shell's foreground job is (Ctrl-C signals the group).
 */
export function startCli(dir: string, env: NodeJS.ProcessEnv = {}, opts: { detached?: boolean; config?: string } = {}): Promise<CliServer> {
  const proc = spawn(process.execPath, [SVC_BIN, 'start', '--config', opts.config ?? 'config/svc.yaml'], {
    cwd: dir,
    env: { ...process.env, SVC_PORT: '0', SVC_ADMIN_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached,
  });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    const onData = () => {
      const m = /"address":"(http:\/\/[^"]+)".*"msg":"svc listening"/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout!.off('data', onData);
      resolve({
        url: m[1]!,
        proc,
        dir,
        output: () => out,
        stop: (signal = 'SIGTERM') => {
          proc.kill(signal);
          return exited;
        },
      });
    };
    proc.stdout!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
}

/** Runs an svc command to completion. */
export function runCli(args: string[], cwd: string, input?: string, env?: NodeJS.ProcessEnv): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SVC_BIN, ...args], { cwd, input, encoding: 'utf8', timeout: 60_000, env: env && { ...process.env, ...env } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs an svc command to completion without blocking this process: servers the test runs itself
 * (sinks, upstreams) keep answering meanwhile, which runCli's spawnSync stops for seconds on a loaded machine.
 */
export function runCliAsync(args: string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [SVC_BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.once('error', reject);
    proc.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
