import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERRORS, SvcError } from '../../kernel/errors.ts';

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

describe('SvcError', () => {
  it('captures no stack for a refusal (4xx), one for a fault (5xx), and leaves the stack limit as it was', () => {
    const limit = Error.stackTraceLimit;
    const refusal = new SvcError('TENANT_QUOTA', 'Quota reached');
    expect(refusal.stack?.split('\n')).toEqual(['SvcError: Quota reached']);
    expect(Error.stackTraceLimit).toBe(limit);
    const fault = new SvcError('INTERNAL');
    expect(fault.stack?.split('\n').length).toBeGreaterThan(1);
    // A status given in place of the catalogue's decides.
    expect(new SvcError('BAD_REQUEST', 'x', { status: 502 }).stack?.split('\n').length).toBeGreaterThan(1);
    expect(Error.stackTraceLimit).toBe(limit);
  });
});
