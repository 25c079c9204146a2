import { describe, expect, it } from 'vitest';
import { compileModel } from '../../../kernel/services/model.ts';

const check = compileModel({
  name: { type: 'string', required: true },
  n: { type: 'integer', required: false, default: 3 },
  ratio: { type: 'number', required: false },
  on: { type: 'boolean', required: false, default: false },
  tags: { type: 'array', required: false, default: [] },
  meta: { type: 'object', required: false },
  any: { type: 'any', required: false },
})!;

describe('typed input models', () => {
  it('has no checker without a model', () => {
    expect(compileModel(null)).toBeUndefined();
  });

  it('fills defaults (copies, so one request cannot change another’s default)', () => {
    const a: Record<string, unknown> = { name: 'x' };
    expect(check(a, new Set())).toBeUndefined();
    expect(a).toEqual({ name: 'x', n: 3, on: false, tags: [] });
    (a.tags as unknown[]).push('mutated');
    const b: Record<string, unknown> = { name: 'y' };
    check(b, new Set());
    expect(b.tags).toEqual([]);
  });

  it('names the missing or mistyped field', () => {
    expect(check({}, new Set())).toBe("missing required field 'name'");
    expect(check({ name: 1 }, new Set())).toBe("field 'name' must be a string");
    expect(check({ name: 'x', n: 1.5 }, new Set())).toBe("field 'n' must be an integer");
    expect(check({ name: 'x', meta: [] }, new Set())).toBe("field 'meta' must be an object");
    expect(check({ name: 'x', tags: {} }, new Set())).toBe("field 'tags' must be an array");
    expect(check({ name: 'x', ratio: '2' }, new Set())).toBe("field 'ratio' must be a number");
  });

  it('converts text values only where they arrived as text', () => {
    const input: Record<string, unknown> = { name: 'x', n: '42', ratio: '0.5', on: 'true' };
    expect(check(input, new Set(['n', 'ratio', 'on']))).toBeUndefined();
    expect(input).toMatchObject({ n: 42, ratio: 0.5, on: true });
    expect(check({ name: 'x', n: '4x' }, new Set(['n']))).toBe("field 'n' must be an integer");
    expect(check({ name: 'x', on: 'yes' }, new Set(['on']))).toBe("field 'on' must be a boolean");
    expect(check({ name: 'x', ratio: '' }, new Set(['ratio']))).toBe("field 'ratio' must be a number");
  });

  it('lists every field’s problem when asked for issues, and returns the first', () => {
    const issues: Array<{ field: string; message: string }> = [];
    const input: Record<string, unknown> = { n: '4x', on: 'yes', ratio: 2 };
    expect(check(input, new Set(['n']), issues)).toBe("missing required field 'name'");
    expect(issues).toEqual([
      { field: 'name', message: "missing required field 'name'" },
      { field: 'n', message: "field 'n' must be an integer" },
      { field: 'on', message: "field 'on' must be a boolean" },
    ]);
    // Fields past a problem are still filled and converted, as they would be alone.
    expect(input).toMatchObject({ n: '4x', tags: [] });
    const none: Array<{ field: string; message: string }> = [];
    expect(check({ name: 'x' }, new Set(), none)).toBeUndefined();
    expect(none).toEqual([]);
  });
});
