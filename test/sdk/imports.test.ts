import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SDK = resolve(import.meta.dirname, '../../sdk');

/** The services' SDK files (not the plugin SDK, which is a separate surface). */
function servicesSdkFiles(dir = SDK): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return e.name === 'plugin' ? [] : servicesSdkFiles(join(dir, e.name));
    return e.name.endsWith('.ts') ? [join(dir, e.name)] : [];
  });
}

/**
 * What a service file sees (`svc/sdk`) type-checks on its own: `svc init` points editors of
 * directories outside the repository at sdk/index.ts, with no Node types and no kernel.
 */
describe("the services' SDK", () => {
  it('imports only its own files and the plugin SDK’s declaration of AuthInfo', () => {
    const outside: string[] = [];
    for (const file of servicesSdkFiles()) {
      for (const m of readFileSync(file, 'utf8').matchAll(/(?:import|export)[^'"]*from\s*'([^']+)'/g)) {
        const spec = m[1]!;
        const target = spec.startsWith('.') ? relative(SDK, resolve(join(file, '..'), spec)) : spec;
        if (target.startsWith('..') || (!spec.startsWith('.') && spec !== 'svc/sdk' && spec !== 'svc/sdk/testing')) outside.push(`${relative(SDK, file)} → ${spec}`);
        else if (target.startsWith('plugin/') && target !== 'plugin/extensions.ts') outside.push(`${relative(SDK, file)} → ${spec}`);
      }
    }
    expect(outside).toEqual([]);
  });
});
