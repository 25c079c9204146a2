import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The kernel's Node flags are set in two places: bin/svc.js's first line (`svc start`, `npx svc`)
 * and `npm start`. The bench reads them from the first line. They must not drift apart.
 */
const root = new URL('../../', import.meta.url);
const shebang = readFileSync(new URL('bin/svc.js', root), 'utf8').split('\n', 1)[0]!;
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> };

describe('kernel Node flags', () => {
  it('bin/svc.js runs node through env -S with the young-generation flag', () => {
    expect(shebang).toMatch(/^#!\/usr\/bin\/env -S node( --[a-z-]+(=\S+)?)+$/);
    expect(shebang).toContain('--max-semi-space-size=32');
  });

  it('npm start passes the same flags as the first line of bin/svc.js', () => {
    const flags = shebang.split(/\s+/).filter((a) => a.startsWith('--'));
    expect(pkg.scripts.start).toBe(`node ${flags.join(' ')} bin/svc.js start`);
  });
});
