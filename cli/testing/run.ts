import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { register } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { readSource } from '../../kernel/config/store.ts';
import { resolveDir } from '../../kernel/kernel.ts';
import { show } from '../../sdk/testing/expect.ts';
import type { TestRegistry } from '../../sdk/testing/index.ts';
import { outgoingPaths } from './fakes.ts';
import { shown, startTestEngine } from './harness.ts';

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
/** A test that has not finished by then fails (a service call has its own, shorter, limit). */
const TEST_TIMEOUT_MS = 30_000;
const TEST_FILE = /\.test\.(ts|js|mjs)$/;

const SDK_URLS: Record<string, string> = {
  'svc/sdk': new URL('../../sdk/index.ts', import.meta.url).href,
  'svc/sdk/testing': new URL('../../sdk/testing/index.ts', import.meta.url).href,
};

/**
 * Test files import `svc/sdk/testing` (and may import `svc/sdk` for its error classes) from any
 * directory, one made by `svc init` included, where no node_modules holds svc: a resolve hook
 * maps both to this installation's files, as kernel/plugin-sdk-resolve.ts does for plugins.
 * The file URL goes on to the next resolver, so the TypeScript loader treats it as its own.
 * Test files are ES modules wherever they are (a directory without a package.json saying so too).
 */
function provideSdk(): void {
  const hook = `const urls = ${JSON.stringify(SDK_URLS)};
export async function resolve(specifier, context, next) {
  const resolved = await next(Object.hasOwn(urls, specifier) ? urls[specifier] : specifier, context);
  return ${TEST_FILE}.test(resolved.url) ? { ...resolved, format: 'module' } : resolved;
}`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`);
}

/** The project's config, read leniently: `svc test` needs only where services are and the outgoing connections' paths. */
function projectOf(configPath: string | undefined): { servicesDir: string; connections: Array<Record<string, unknown>> } {
  const candidates = configPath ? [configPath] : [process.env.SVC_CONFIG, 'config/svc.yaml', 'svc.yaml'].filter((p): p is string => !!p);
  const found = candidates.map((p) => resolve(p)).find((p) => existsSync(p));
  let raw: { server?: { services_dir?: unknown }; outgoing_rest?: unknown } = {};
  if (found) {
    try {
      raw = (readSource(readFileSync(found, 'utf8'), process.env) ?? {}) as typeof raw;
    } catch {
      // An invalid config is `svc check`'s to report; tests run with the defaults.
    }
  }
  const dir = typeof raw.server?.services_dir === 'string' ? raw.server.services_dir : './services';
  return { servicesDir: resolveDir(dir), connections: Array.isArray(raw.outgoing_rest) ? (raw.outgoing_rest as Array<Record<string, unknown>>) : [] };
}

function testFilesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? (e.name === 'node_modules' || e.name.startsWith('.') ? [] : testFilesUnder(join(dir, e.name))) : TEST_FILE.test(e.name) ? [join(dir, e.name)] : []));
}

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
  color: boolean;
}

/** Where a failure happened in the test file: its first stack frame there. */
function whereIn(err: unknown, file: string): string | undefined {
  const stack = err instanceof Error ? String(err.stack) : '';
  const url = pathToFileURL(file).href;
  for (const line of stack.split('\n')) {
    const at = line.indexOf(url) >= 0 ? line.slice(line.indexOf(url) + url.length) : line.indexOf(file) >= 0 ? line.slice(line.indexOf(file) + file.length) : undefined;
    const position = at && /^:(\d+):(\d+)/.exec(at);
    if (position) return `${shown(file)}:${position[1]}:${position[2]}`;
  }
  return undefined;
}

function withTimeout(run: () => unknown): Promise<unknown> {
  return new Promise((resolveRun, reject) => {
    const timer = setTimeout(() => reject(new Error(`the test did not finish within ${TEST_TIMEOUT_MS / 1000} s`)), TEST_TIMEOUT_MS);
    Promise.resolve()
      .then(run)
      .then(resolveRun, reject)
      .finally(() => clearTimeout(timer));
  });
}

const indent = (text: string, by: string) => text.replace(/^/gm, by);

/**
 * `svc test [FILES...]`: loads each test file (Node, through the TypeScript loader `svc` runs
 * under), runs its tests one at a time, and prints a line per test, with the reason, the test's
 * line and the service's own stack frames under each failure. Exit 0 when all pass, 1 when any
 * fails, 2 for a usage error (no such file, no test files).
 */
export async function runTests(args: string[], configPath: string | undefined, io: Output): Promise<number> {
  const started = Date.now();
  const flag = args.find((a) => a.startsWith('-'));
  if (flag) {
    io.err(`svc test: unknown option ${flag}\nusage: svc test [--config FILE] [FILE...]`);
    return EXIT_USAGE;
  }
  const project = projectOf(configPath);
  const files: string[] = [];
  for (const arg of args) {
    const path = resolve(arg);
    if (!existsSync(path)) {
      io.err(`svc test: no such file or directory: ${arg}`);
      return EXIT_USAGE;
    }
    files.push(...(statSync(path).isDirectory() ? testFilesUnder(path) : [path]));
  }
  if (!args.length) files.push(...testFilesUnder(project.servicesDir));
  if (!files.length) {
    io.err(`svc test: no test files (*.test.ts) ${args.length ? 'in ' + args.join(' ') : `under ${shown(project.servicesDir)}/`}`);
    return EXIT_USAGE;
  }

  const paint = (code: number, text: string) => (io.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const { engine, close } = await startTestEngine(outgoingPaths(project.connections));
  provideSdk();
  const registry = ((globalThis as unknown as Record<symbol, TestRegistry>)[Symbol.for('svc.testing')] ??= { tests: [], prefix: [] });
  registry.engine = engine;

  let passed = 0;
  let failed = 0;
  // A promise a test forgot to await fails that test (or the next one), not the whole run.
  let unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    for (const file of files) {
      io.out(shown(file));
      registry.tests = [];
      engine.testFile = file;
      try {
        await import(pathToFileURL(file).href);
      } catch (err) {
        failed++;
        io.out(`  ${paint(31, '✗')} the file does not load`);
        io.out(indent(err instanceof Error ? (err.stack ?? err.message) : show(err), '      '));
        continue;
      }
      if (!registry.tests.length) io.out('  (no tests)');
      for (const t of registry.tests) {
        engine.exceptions = [];
        const began = Date.now();
        try {
          unhandled = [];
          await withTimeout(t.fn);
          await new Promise((r) => setImmediate(r));
          if (unhandled.length) throw unhandled[0];
          passed++;
          io.out(`  ${paint(32, '✓')} ${t.name} ${paint(2, `(${Date.now() - began} ms)`)}`);
        } catch (err) {
          failed++;
          io.out(`  ${paint(31, '✗')} ${t.name} ${paint(2, `(${Date.now() - began} ms)`)}`);
          const message = err instanceof Error ? (err.name === 'ExpectationError' || err.name === 'Error' ? err.message : `${err.name}: ${err.message}`) : `threw ${show(err)}`;
          io.out(indent(message, '      '));
          const where = whereIn(err, file);
          if (where) io.out(`      at ${where}`);
          for (const e of engine.exceptions) io.out(indent(`the service raised ${e.stack ?? e.message}`, '      '));
        }
      }
    }
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await close();
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  io.out('');
  io.out(`${failed ? paint(31, `${failed} failed`) + ', ' : ''}${paint(32, `${passed} passed`)} (${files.length} file${files.length === 1 ? '' : 's'}, ${seconds} s)`);
  return failed ? EXIT_FAILED : EXIT_OK;
}
