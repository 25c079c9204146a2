/**
 * Assertions for service tests, in the style most test libraries share: `expect(value).toBe(x)`,
 * `.not.toBe(x)`. Small on purpose (no dependency, no Node API); a failure says what was expected
 * and what came, with JSON of both.
 */

export interface Expectation {
  /** The inverse of each assertion. */
  readonly not: Expectation;
  /** Same value (`Object.is`). */
  toBe(expected: unknown): void;
  /** Same structure and values, deeply (`undefined` properties count as absent). */
  toEqual(expected: unknown): void;
  /** Has at least these properties, deeply; arrays match element by element, of the same length. */
  toMatchObject(expected: object): void;
  /** An array with this element (deeply equal), or a string with this text. */
  toContain(item: unknown): void;
  toHaveLength(length: number): void;
  /** A string matching the pattern (or containing the text). */
  toMatch(pattern: RegExp | string): void;
  toBeInstanceOf(Class: abstract new (...args: never[]) => unknown): void;
  toBeTruthy(): void;
  toBeFalsy(): void;
  toBeUndefined(): void;
  toBeDefined(): void;
  toBeGreaterThan(n: number): void;
  toBeLessThan(n: number): void;
  /** A function that throws (an async one: `await expect(fn).toThrow()`), optionally with a message matching. */
  toThrow(message?: RegExp | string): void | Promise<void>;
}

/** An assertion that did not hold. */
export class ExpectationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExpectationError';
  }
}

export function show(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return `[function ${value.name || 'anonymous'}]`;
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  if (typeof value === 'bigint') return `${value}n`;
  try {
    const text = JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? `<${v.length} bytes>` : v));
    return text.length > 500 ? text.slice(0, 500) + '…' : text;
  } catch {
    return String(value);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

function equal(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (!isObject(a) || !isObject(b)) return false;
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && a.every((x, i) => x === b[i]);
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ka = keys(a);
  const kb = keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

function matches(actual: unknown, expected: unknown): boolean {
  if (!isObject(expected) || !isObject(actual)) return equal(actual, expected);
  if (Array.isArray(expected)) return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matches(actual[i], e));
  if (expected instanceof Date || expected instanceof Uint8Array) return equal(actual, expected);
  return Object.keys(expected).every((k) => matches(actual[k], expected[k]));
}

function textMatches(actual: unknown, pattern: RegExp | string): boolean {
  return typeof actual === 'string' && (typeof pattern === 'string' ? actual.includes(pattern) : pattern.test(actual));
}

function build(actual: unknown, negated: boolean): Expectation {
  /** `expected` is a list so that an expected `undefined` is still shown. */
  const check = (holds: boolean, what: string, ...expected: unknown[]) => {
    if (holds !== negated) return;
    const head = `expected ${show(actual)} ${negated ? 'not ' : ''}${what}`;
    throw new ExpectationError(expected.length ? `${head} ${show(expected[0])}` : head);
  };
  const expectation: Expectation = {
    get not() {
      return build(actual, !negated);
    },
    toBe: (expected) => check(Object.is(actual, expected), 'to be', expected),
    toEqual: (expected) => check(equal(actual, expected), 'to equal', expected),
    toMatchObject: (expected) => check(matches(actual, expected), 'to match', expected),
    toContain: (item) =>
      check(Array.isArray(actual) ? actual.some((x) => equal(x, item)) : typeof actual === 'string' && typeof item === 'string' && actual.includes(item), 'to contain', item),
    toHaveLength: (length) => check(isObject(actual) || typeof actual === 'string' ? (actual as { length?: unknown }).length === length : false, 'to have length', length),
    toMatch: (pattern) => check(textMatches(actual, pattern), 'to match', String(pattern)),
    toBeInstanceOf: (Class) => check(actual instanceof (Class as unknown as new () => unknown), `to be an instance of ${Class.name}`),
    toBeTruthy: () => check(!!actual, 'to be truthy'),
    toBeFalsy: () => check(!actual, 'to be falsy'),
    toBeUndefined: () => check(actual === undefined, 'to be undefined'),
    toBeDefined: () => check(actual !== undefined, 'to be defined'),
    toBeGreaterThan: (n) => check(typeof actual === 'number' && actual > n, 'to be greater than', n),
    toBeLessThan: (n) => check(typeof actual === 'number' && actual < n, 'to be less than', n),
    toThrow(message) {
      if (typeof actual !== 'function') throw new ExpectationError(`expected a function to call, got ${show(actual)}`);
      const verdict = (threw: boolean, err: unknown) => {
        const fits = threw && (message === undefined || textMatches(err instanceof Error ? err.message : String(err), message));
        if (fits === negated) throw new ExpectationError(`expected the function ${negated ? 'not ' : ''}to throw${message === undefined ? '' : ` ${show(String(message))}`}, ${threw ? `it threw ${show(err)}` : 'it returned'}`);
      };
      let out: unknown;
      try {
        out = (actual as () => unknown)();
      } catch (err) {
        return verdict(true, err);
      }
      if (isObject(out) && typeof (out as { then?: unknown }).then === 'function') {
        return (out as unknown as Promise<unknown>).then(
          () => verdict(false, undefined),
          (err: unknown) => verdict(true, err),
        );
      }
      return verdict(false, undefined);
    },
  };
  return expectation;
}

/** An expectation about a value: `expect(res.status).toBe(201)`. */
export function expect(actual: unknown): Expectation {
  return build(actual, false);
}
