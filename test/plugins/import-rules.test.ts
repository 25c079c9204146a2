import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Plugins are written against the plugin SDK: no file under plugins/ imports kernel/, and a
 * plugin imports another plugin's files only through its family's declared shared module
 * (plugins/<family>/shared/) or the bundled plugins' contracts (plugins/capabilities.ts).
 * The SDKs depend on nothing of the kernel: no file under sdk/ imports kernel/ (the kernel
 * imports the contract from sdk/plugin/, never the other way round).
 */
const ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));
const PLUGINS = join(ROOT, 'plugins');
const SDK = join(ROOT, 'sdk');
const KERNEL = join(ROOT, 'kernel');

/**
 * Imports that break the rule today, each to be removed (the test fails when one is fixed and
 * left here, so this list can only shrink).
 */
const KNOWN: string[] = [];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tsFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)) out.push((m[1] ?? m[2])!);
  return out;
}

/** The folder a file belongs to: the nearest one with a plugin.ts, or a family's shared/ folder. */
function unitOf(file: string): string {
  const parts = relative(PLUGINS, file).split(sep);
  if (parts[1] === 'shared') return join(PLUGINS, parts[0]!, 'shared');
  for (let dir = dirname(file); dir.startsWith(PLUGINS) && dir !== PLUGINS; dir = dirname(dir)) if (existsSync(join(dir, 'plugin.ts'))) return dir;
  return dirname(file);
}

const inside = (path: string, dir: string) => path === dir || path.startsWith(dir + sep);

function violations(): { kernel: string[]; crossing: string[] } {
  const kernel: string[] = [];
  const crossing: string[] = [];
  for (const file of tsFiles(PLUGINS)) {
    const unit = unitOf(file);
    const family = join(PLUGINS, relative(PLUGINS, file).split(sep)[0]!);
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue; // packages (zod, undici, …)
      const target = resolve(dirname(file), spec);
      const edge = `${relative(ROOT, file)} -> ${relative(ROOT, target)}`;
      if (inside(target, KERNEL)) kernel.push(edge);
      else if (inside(target, join(ROOT, 'sdk', 'internal'))) kernel.push(edge);
      else if (inside(target, SDK)) continue;
      else if (inside(target, unit) || inside(target, join(family, 'shared')) || target === join(PLUGINS, 'capabilities.ts')) continue;
      else crossing.push(edge);
    }
  }
  return { kernel, crossing };
}

/** Imports from a file under sdk/ that reach kernel/. */
function sdkIntoKernel(): string[] {
  const edges: string[] = [];
  for (const file of tsFiles(SDK)) {
    for (const spec of importsOf(file)) {
      if (spec.startsWith('.') && inside(resolve(dirname(file), spec), KERNEL)) edges.push(`${relative(ROOT, file)} -> ${spec}`);
    }
  }
  return edges;
}

describe('the SDKs import nothing of the kernel', () => {
  it('no file under sdk/ imports kernel/', () => {
    expect(sdkIntoKernel()).toEqual([]);
  });

  it('the rule sees the SDK files and their imports (a scan that finds nothing proves nothing)', () => {
    const files = tsFiles(SDK);
    expect(files.some((f) => f.endsWith(join('sdk', 'plugin', 'contract.ts')))).toBe(true);
    expect(files.flatMap(importsOf).filter((s) => s.startsWith('.')).length).toBeGreaterThan(20);
  });
});

describe('plugins import only the plugin SDK and their family', () => {
  const found = violations();

  it('no file under plugins/ imports kernel/ (or the services SDK runtime)', () => {
    expect(found.kernel).toEqual([]);
  });

  it('no plugin imports another plugin, except through its family shared module', () => {
    expect(found.crossing.sort()).toEqual([...KNOWN].sort());
  });

  it('the rule sees imports at all (a scan that finds nothing proves nothing)', () => {
    const all = tsFiles(PLUGINS).flatMap(importsOf);
    expect(all.filter((s) => s.includes('sdk/plugin/index.ts')).length).toBeGreaterThan(20);
  });
});
