import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ISOLATED_VM_LINES, NativeModuleError, NODE_MAJOR, pickLine, resolveLine, SQLITE_LINES, type NativeLine } from '../../../kernel/platform/native.ts';
import { isolatedVmEntry } from '../../../kernel/sandbox/ivm.ts';
import { sqliteDriver } from '../../../kernel/store/sqlite-driver.ts';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
  dependencies: Record<string, string>;
};

describe('native module lines', () => {
  it('pick isolated-vm by Node major: 20 → 5.0.4, 22 → 6.2.0, 24 and later → 7.0.1', () => {
    expect(pickLine(ISOLATED_VM_LINES, 20).spec).toBe('isolated-vm@5.0.4');
    expect(pickLine(ISOLATED_VM_LINES, 22).spec).toBe('isolated-vm@6.2.0');
    expect(pickLine(ISOLATED_VM_LINES, 23).spec).toBe('isolated-vm@6.2.0');
    expect(pickLine(ISOLATED_VM_LINES, 24).spec).toBe('isolated-vm@7.0.1');
    expect(pickLine(ISOLATED_VM_LINES, 26).spec).toBe('isolated-vm@7.0.1');
  });

  it('pick better-sqlite3 12 on Node 20 and 13 from Node 22', () => {
    expect(pickLine(SQLITE_LINES, 20).alias).toBe('better-sqlite3-12');
    expect(pickLine(SQLITE_LINES, 22).alias).toBe('better-sqlite3-13');
    expect(pickLine(SQLITE_LINES, 24).alias).toBe('better-sqlite3-13');
  });

  it('refuse a Node older than every line, naming the version needed', () => {
    expect(() => pickLine(ISOLATED_VM_LINES, 18)).toThrow(NativeModuleError);
    expect(() => pickLine(ISOLATED_VM_LINES, 18)).toThrow(/needs Node 20 or later for isolated-vm/);
  });

  it('say how to reinstall when the line for this Node is not installed', () => {
    const lines: NativeLine[] = [{ alias: 'svc-test-no-such-package', spec: 'no-such-package@1.0.0', fromMajor: 0 }];
    let err: unknown;
    try {
      resolveLine(lines);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NativeModuleError);
    const message = (err as Error).message;
    expect(message).toContain(`Node ${process.versions.node} needs no-such-package@1.0.0 (package svc-test-no-such-package)`);
    expect(message).toContain('rm -rf node_modules && npm install');
  });

  it('every line is an optional aliased dependency of package.json with the version the table names', () => {
    for (const line of [...ISOLATED_VM_LINES, ...SQLITE_LINES]) {
      const [name, version] = line.spec.split('@') as [string, string];
      const declared = pkg.optionalDependencies[line.alias];
      expect(declared, line.alias).toBeDefined();
      expect(declared!.startsWith(`npm:${name}@`), line.alias).toBe(true);
      expect(declared!.replace(/^npm:[^@]+@\^?/, ''), line.alias).toMatch(new RegExp(`^${version.replace(/\./g, '\\.')}`));
    }
    // The unaliased packages would be built on every Node and fail on some.
    expect(pkg.dependencies['isolated-vm']).toBeUndefined();
    expect(pkg.dependencies['better-sqlite3']).toBeUndefined();
  });

  it('engines names the tested lines and nothing else', () => {
    expect(pkg.engines.node).toBe('^20.19.0 || ^22.12.0 || ^24.0.0');
    expect([20, 22, 24]).toContain(NODE_MAJOR);
  });

  it('the lines for this Node are installed and load (isolated-vm in a child process, as sandboxes do)', () => {
    expect(isolatedVmEntry()).toContain(`/node_modules/${pickLine(ISOLATED_VM_LINES).alias}/`);
    const Database = sqliteDriver();
    const db = new Database(':memory:');
    expect(db.prepare('select sqlite_version() as v').get()).toMatchObject({ v: expect.any(String) });
    db.close();
  });
});
