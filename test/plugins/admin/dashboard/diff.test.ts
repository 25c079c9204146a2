import { describe, expect, it } from 'vitest';
// @ts-expect-error: the Dashboard's own script, plain JavaScript without types.
import { lineDiff, MAX_LINES } from '../../../../plugins/admin/dashboard/assets/diff.js';

/** The deploy history's line diff (plugins/admin/dashboard/assets/diff.js). */
const diff = (a: string, b: string) => (lineDiff(a, b) as Array<[string, string]>).map(([k, l]) => k + l).join('\n');

describe('the line diff of two versions', () => {
  it('keeps common lines and marks removed and added ones, in order', () => {
    expect(diff('a\nb\nc\nd', 'a\nc\nx\nd')).toBe(' a\n-b\n c\n+x\n d');
    expect(diff('same\n', 'same\n')).toBe(' same\n ');
    expect(diff('', 'new')).toBe('-\n+new');
    // A changed line: its old text, then its new.
    expect(diff('a\npen: 2.5\nz', 'a\npen: 3\nz')).toBe(' a\n-pen: 2.5\n+pen: 3\n z');
  });

  it('rebuilds both texts from its lines', () => {
    const a = Array.from({ length: 60 }, (_, i) => `line ${i % 7} ${i % 3}`).join('\n');
    const b = Array.from({ length: 55 }, (_, i) => `line ${i % 5} ${i % 3}`).join('\n');
    const lines = lineDiff(a, b) as Array<[string, string]>;
    expect(lines.filter(([k]) => k !== '+').map(([, l]) => l).join('\n')).toBe(a);
    expect(lines.filter(([k]) => k !== '-').map(([, l]) => l).join('\n')).toBe(b);
  });

  it('compares texts past MAX_LINES as wholes', () => {
    const big = Array.from({ length: MAX_LINES + 1 }, (_, i) => String(i)).join('\n');
    expect((lineDiff(big, 'x') as unknown[]).length).toBe(MAX_LINES + 2);
  });
});
