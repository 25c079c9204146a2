import { mkdtempSync, mkdirSync, writeFileSync, rmSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { parse, stringify } from 'yaml';
import type { FastifyInstance } from 'fastify';
import { Kernel } from '../../kernel/kernel.ts';
import type { Clock } from '../../kernel/platform/clock.ts';
import type { Plugin } from '../../kernel/plugin.ts';
import { testStoreEnv } from './store.ts';

export interface TestKernel {
  app: FastifyInstance;
  kernel: Kernel;
  /** Temp directory with config/svc.yaml, services/ and data/. */
  dir: string;
  configPath: string;
  servicesDir: string;
  /** Base URL when started with listen: true. */
  url: string | undefined;
  /** Writes a service file (hot deploy) and waits until it is deployed or rejected. */
  writeService(file: string, code: string): Promise<void>;
  removeService(file: string): Promise<void>;
  /** Rewrites the config file and reloads it; resolves whether it was accepted. */
  writeConfig(yaml: string): Promise<boolean>;
  /** Rewrites the config file only: the server's file watching applies it. */
  saveConfigFile(yaml: string): void;
  close(): Promise<void>;
}

export interface StartOptions {
  config: string;
  services?: Record<string, string>;
  clock?: Clock;
  /** The kernel's clock for durations (sandbox deadlines, wedged processes, step limits). */
  monotonic?: Clock;
  listen?: boolean;
  env?: NodeJS.ProcessEnv;
  extraPlugins?: Plugin[];
  /** Reuse a directory (restart tests). */
  dir?: string;
  /** Capture log lines (objects) instead of discarding them. */
  logs?: Array<Record<string, unknown>>;
}

export async function startKernel(opts: StartOptions): Promise<TestKernel> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'svc-test-'));
  const configPath = join(dir, 'config', 'svc.yaml');
  const servicesDir = join(dir, 'services');
  mkdirSync(join(dir, 'config'), { recursive: true });
  mkdirSync(servicesDir, { recursive: true });
  const withServer = (text: string) => withTestServer(text, dir);
  writeFileSync(configPath, withServer(opts.config));
  for (const [file, code] of Object.entries(opts.services ?? {})) writeFileSync(join(servicesDir, file), code);
  const logs = opts.logs;
  const logger = logs
    ? pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) })
    : pino({ level: 'silent' });
  // Under SVC_TEST_STORE=postgres the store is the data directory's schema (test/helpers/store.ts).
  const storeEnv = await testStoreEnv(join(dir, 'data'));
  const kernel = await Kernel.create({ configPath, clock: opts.clock, monotonic: opts.monotonic, logger, watch: true, env: { SVC_ADMIN_PORT: '0', ...process.env, ...storeEnv, ...opts.env }, extraPlugins: opts.extraPlugins });
  let url: string | undefined;
  if (opts.listen) url = await kernel.listen();
  else await kernel.app.ready();
  return {
    app: kernel.app,
    kernel,
    dir,
    configPath,
    servicesDir,
    url,
    async writeService(file, code) {
      writeFileSync(join(servicesDir, file), code);
      await new Promise((r) => setTimeout(r, 120));
      await kernel.services.settled();
    },
    async removeService(file) {
      unlinkSync(join(servicesDir, file));
      await new Promise((r) => setTimeout(r, 120));
      await kernel.services.settled();
    },
    async writeConfig(text) {
      writeFileSync(configPath, withServer(text));
      return kernel.configStore.reload();
    },
    saveConfigFile(text) {
      writeFileSync(configPath, withServer(text));
    },
    async close() {
      await kernel.close();
      if (!opts.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Tests use the temp directory, a free port and one sandbox process unless they say otherwise. */
function withTestServer(text: string, dir: string): string {
  const doc = (parse(text) ?? {}) as Record<string, unknown>;
  const server = (doc.server ?? {}) as Record<string, unknown>;
  server.port ??= 0;
  server.data_dir ??= join(dir, 'data');
  server.services_dir ??= join(dir, 'services');
  server.sandbox ??= { workers: 1 };
  doc.server = server;
  return stringify(doc);
}

/**
 * Whether configs with tenants start on this Node: not on Node 20 (isolated-vm 5.0.4 and
 * GHSA-864f-rcv7-6rh4; docs/tenants.md). Suites that need tenants run on Node 22 and 24; there the
 * refusal itself is tested by test/kernel/tenants/services.test.ts.
 */
export { isolatedVmAdvisory } from '../../kernel/sandbox/ivm.ts';
import { isolatedVmAdvisory as advisoryHere } from '../../kernel/sandbox/ivm.ts';
export const TENANTS_RUN_HERE = advisoryHere() === undefined;
