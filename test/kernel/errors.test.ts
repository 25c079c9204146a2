import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS } from '../../kernel/errors.ts';

describe('error catalogue', () => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map([...doc.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1]!, Number(m[2])]));

  it('documents every code with its status', () => {
    for (const [code, entry] of Object.entries(ERRORS)) expect([code, rows.get(code)]).toEqual([code, entry.status]);
  });

  it('documents no code the kernel does not have', () => {
    for (const code of rows.keys()) expect(Object.keys(ERRORS)).toContain(code);
  });
});
