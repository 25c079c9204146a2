import { describe, expect, it } from 'vitest';
import { toPositional } from '../../../../plugins/store/postgres/placeholders.ts';

describe('? placeholders to $n', () => {
  it('numbers the placeholders of SQL code in order', () => {
    expect(toPositional('SELECT a FROM t WHERE b = ? AND c IN (?, ?)')).toBe('SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)');
  });

  it("leaves a ? alone in literals, quoted identifiers, dollar-quoted bodies and comments", () => {
    expect(toPositional(`SELECT '?', 'it''s ?', "a?b", ? -- why?\n, $$ ? $$, $x$ ? $x$ /* ? */, ?`)).toBe(
      `SELECT '?', 'it''s ?', "a?b", $1 -- why?\n, $$ ? $$, $x$ ? $x$ /* ? */, $2`,
    );
  });

  it('leaves an unterminated literal as it is (PostgreSQL reports it)', () => {
    expect(toPositional("SELECT ?, 'open ?")).toBe("SELECT $1, 'open ?");
  });
});
