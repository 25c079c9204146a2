import { describe, expect as vexpect, it } from 'vitest';
import { expect, ExpectationError } from '../../../sdk/testing/expect.ts';
import { NotFound, ServiceError } from '../../../sdk/errors.ts';

const fails = (fn: () => unknown) => vexpect(fn).toThrow(ExpectationError);

/** The assertions service tests get from svc/sdk/testing. */
describe('expect', () => {
  it('compares values, deeply and partially', () => {
    expect(1).toBe(1);
    expect({ a: [1, { b: 2 }], c: undefined }).toEqual({ a: [1, { b: 2 }] });
    expect({ a: 1, b: { c: 2, d: 3 } }).toMatchObject({ b: { c: 2 } });
    expect([{ a: 1, x: 0 }]).toMatchObject([{ a: 1 }]);
    expect(new Uint8Array([1, 2])).toEqual(new Uint8Array([1, 2]));
    fails(() => expect({ a: 1 }).toEqual({ a: 2 }));
    fails(() => expect([{ a: 1 }, { a: 2 }]).toMatchObject([{ a: 1 }]));
    fails(() => expect({}).toBe({}));
  });

  it('says what was expected and what came', () => {
    vexpect(() => expect(409).toBe(201)).toThrow('expected 409 to be 201');
    vexpect(() => expect({ a: 1 }).not.toEqual({ a: 1 })).toThrow('expected {"a":1} not to equal {"a":1}');
    vexpect(() => expect(1).toBe(undefined)).toThrow('expected 1 to be undefined');
  });

  it('has the usual matchers, each with .not', () => {
    expect([1, { a: 2 }]).toContain({ a: 2 });
    expect('hello').toContain('ell');
    expect([1, 2]).toHaveLength(2);
    expect('abc').toMatch(/b/);
    expect(new NotFound()).toBeInstanceOf(ServiceError);
    expect(0).toBeFalsy();
    expect(undefined).toBeUndefined();
    expect(2).toBeGreaterThan(1);
    expect(1).not.toBeGreaterThan(1);
    expect([1]).not.toContain(2);
    fails(() => expect(undefined).toBeDefined());
  });

  it('checks that a function throws, synchronously or not', async () => {
    expect(() => {
      throw new Error('boom');
    }).toThrow('boom');
    await expect(async () => {
      throw new Error('later');
    }).toThrow(/lat/);
    expect(() => 1).not.toThrow();
    fails(() => expect(() => 1).toThrow());
    await vexpect(expect(async () => 1).toThrow()).rejects.toThrow('expected the function to throw, it returned');
  });
});
