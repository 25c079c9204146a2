import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleDir } from './support.ts';

/** Each example imports only the plugin SDK, node: builtins, its declared dependencies and its own files. */
describe.each(['jwt', 'csv'])('examples/plugins/%s imports', (name) => {
  const dir = exampleDir(name);
  const deps = Object.keys((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

  it('nothing else', () => {
    const bad: string[] = [];
    let seen = 0;
    for (const file of files) {
      for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s+'([^']+)'/g)) {
        const spec = m[1]!;
        seen++;
        if (spec === 'svc/sdk/plugin' || spec.startsWith('node:')) continue;
        if (spec.startsWith('.')) {
          if (!resolve(dirname(join(dir, file)), spec).startsWith(dir + sep)) bad.push(`${file} -> ${spec}`);
          continue;
        }
        if (!deps.includes(spec.split('/')[0]!)) bad.push(`${file} -> ${spec}`);
      }
    }
    expect(seen).toBeGreaterThan(3);
    expect(bad).toEqual([]);
  });
});
