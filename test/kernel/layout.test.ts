import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const KERNEL = join(import.meta.dirname, '../../kernel');

function linesOf(dir: string): number {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .reduce((sum, f) => sum + readFileSync(join(dir, f), 'utf8').split('\n').length - 1, 0);
}

/**
 * The kernel stays readable in about an hour: the lifecycle core (kernel/*.ts and kernel/http/)
 * within 1,500 lines, everything else in bounded folders (docs/architecture.md lists them).
 */
describe('kernel layout', () => {
  it('keeps the lifecycle core within 1,500 lines', () => {
    const core = linesOf(KERNEL) + linesOf(join(KERNEL, 'http'));
    expect(core).toBeLessThanOrEqual(1500);
  });

  it('has only the folders docs/architecture.md describes, and the sandbox runner has its README', () => {
    const folders = readdirSync(KERNEL, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    expect(folders).toEqual(['config', 'http', 'platform', 'sandbox', 'services', 'store', 'tenants']);
    const architecture = readFileSync(join(import.meta.dirname, '../../docs/architecture.md'), 'utf8');
    for (const folder of folders) expect(architecture).toContain(`kernel/${folder}/`);
    expect(readdirSync(join(KERNEL, 'sandbox'))).toContain('README.md');
  });
});
