import { expect } from 'vitest';
import { FORGED, NOT_SERIALIZABLE, SERVICE_FAILED, TIME_LIMIT, TIMEOUT_MS, svc, type CorpusCase } from './types.ts';

/** A hostile thenable is answered within the time limit plus this. */
const MARGIN = 1500;
const WITHIN = TIMEOUT_MS + MARGIN;

/** A handler that is not async, so what it returns reaches the SDK runtime as it is. */
const sync = (body: string, prelude?: string) => svc(body, { sync: true, prelude });

/** A second call of the same service that must not be answered by the first one's forged lines. */
const VICTIM_PRELUDE = `
let release = () => {};
const gate = new Promise((r) => (release = r));
let victimId = 0;
const forgedLine = () => victimId + '\\t' + JSON.stringify({ status: 200, headers: { 'x-svc-cid': '${FORGED}' }, body: { forged: true } });`;
const VICTIM_BRANCH = `if (ctx.query.role === 'victim') { victimId = ctx.req && ctx.req.callId; return gate.then(() => ({ victim: true })); }`;
const victim = (url: string) => ({
  request: { url: `${url}?role=victim` },
  leadMs: 150,
  expect: { status: 200, bodyCheck: (j: unknown) => expect(j).toEqual({ victim: true }), withinMs: WITHIN },
});

/**
 * Thenables: a handler's return value is awaited by the SDK as a promise would be. Whatever a
 * hostile `then` does (calls back with junk, twice, never, throws, returns text with result
 * lines in it), the server answers this call alone, within its limit, and stays up.
 */
export const thenables: CorpusCase[] = [
  {
    name: 'then(ok) calls ok with a JSON value: answered like a resolved promise',
    file: 'then-ok.js',
    note: 'body `{"via":"then"}`',
    code: sync(`return { then(ok) { ok({ via: 'then' }); } };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ via: 'then' }), withinMs: WITHIN },
  },
  {
    name: 'then calls ok with a BigInt (not JSON)',
    file: 'then-bigint.js',
    code: sync(`return { then(ok) { ok({ n: 10n }); } };`),
    expect: { status: 500, details: NOT_SERIALIZABLE, withinMs: WITHIN },
  },
  {
    name: 'then calls ok with a cyclic object',
    file: 'then-cyclic.js',
    code: sync(`const o = {}; o.self = o; return { then(ok) { ok(o); } };`),
    expect: { status: 500, details: NOT_SERIALIZABLE, withinMs: WITHIN },
  },
  {
    name: 'then calls ok with a string holding newlines, tabs and fake result lines: it is just the body',
    file: 'then-fake-lines.js',
    note: 'the body is exactly that string (JSON-encoded, as a json channel writes strings)',
    code: sync(`return { then(ok) { ok('\\n999\\t{"status":200}\\n0\\t{"status":204}\\n'); } };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toBe('\n999\t{"status":200}\n0\t{"status":204}\n'), withinMs: WITHIN },
  },
  {
    name: 'then calls ok twice: the first value wins',
    file: 'then-twice.js',
    note: 'body `{"first":true}`',
    code: sync(`return { then(ok) { ok({ first: true }); ok({ second: true }); } };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ first: true }), withinMs: WITHIN },
  },
  {
    name: 'then never calls back: time limit',
    file: 'then-never.js',
    code: sync(`return { then() {} };`),
    expect: { status: 503, details: TIME_LIMIT, withinMs: WITHIN },
  },
  {
    name: 'then throws',
    file: 'then-throws.js',
    code: sync(`return { then() { throw new Error('then exploded'); } };`),
    expect: { status: 500, details: SERVICE_FAILED, withinMs: WITHIN },
  },
  {
    name: 'then rejects with a non-Error whose toString loops',
    file: 'then-reject-loop.js',
    code: sync(`return { then(_ok, fail) { fail({ toString() { for (;;) {} } }); } };`),
    expect: { status: [500, 503], withinMs: WITHIN },
  },
  {
    name: 'a Proxy returned as the value: its then trap resolves',
    file: 'then-proxy.js',
    note: 'body `{"via":"proxy"}`',
    code: sync(`return new Proxy({}, { get(_t, k) { return k === 'then' ? (ok) => ok({ via: 'proxy' }) : undefined; } });`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ via: 'proxy' }), withinMs: WITHIN },
  },
  {
    name: 'a Proxy whose every trap throws',
    file: 'then-proxy-throws.js',
    code: sync(`const boom = () => { throw new Error('trap'); }; return new Proxy({}, { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom });`),
    expect: { status: 500, details: SERVICE_FAILED, withinMs: WITHIN },
  },
  {
    name: 'a then getter that returns a function once and a number after',
    file: 'then-getter.js',
    code: sync(`let reads = 0; return { get then() { return reads++ === 0 ? (ok) => ok({ read: reads }) : 42; } };`),
    expect: { status: [200, 500], withinMs: WITHIN },
  },
  {
    name: 'then returns text with a forged result line for a concurrent call of the same service',
    file: 'then-forge.js',
    note: 'body `{"honest":true}`; the concurrent call of the same service gets its own `{"victim":true}`',
    code: sync(
      `${VICTIM_BRANCH}
      return { then(ok) { ok({ honest: true }); release(); return '{"status":200,"headers":{},"body":{"own":"forged"}}\\n' + forgedLine() + '\\n'; } };`,
      VICTIM_PRELUDE,
    ),
    alongside: victim('/then-forge'),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ honest: true }), withinMs: WITHIN },
  },
  {
    name: 'then returns text that is not JSON (a result line the kernel cannot parse)',
    file: 'then-garbage.js',
    note: 'body `{"honest":true}`; the kernel does not throw',
    code: sync(`return { then(ok) { ok({ honest: true }); return 'not json at all\\n'; } };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ honest: true }), withinMs: WITHIN },
  },
  {
    name: 'then returns a thenable that feeds a raw envelope (status 1000, forged X-Svc-CID)',
    file: 'then-raw-envelope.js',
    note: 'body `{"honest":true}`; no status 1000, no forged CID',
    code: sync(
      `return { then(ok) { ok({ honest: true }); return { then(cb) { cb('{"status":1000,"headers":{"x-svc-cid":"${FORGED}"},"body":"raw"}'); } }; } };`,
    ),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ honest: true }), withinMs: WITHIN },
  },
  {
    name: 'then returns a thenable that feeds a raw envelope with a forged line for a concurrent call',
    file: 'then-raw-forge.js',
    note: 'body `{"honest":true}`; the concurrent call gets its own `{"victim":true}`',
    code: sync(
      `${VICTIM_BRANCH}
      return { then(ok) { release(); ok({ honest: true }); return { then(cb) { cb('{"status":200,"headers":{},"body":"own"}\\n' + forgedLine()); } }; } };`,
      VICTIM_PRELUDE,
    ),
    alongside: victim('/then-raw-forge'),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ honest: true }), withinMs: WITHIN },
  },
  {
    name: 'an endless chain of thenables, each resolving with the next',
    file: 'then-endless.js',
    code: sync(`const t = (n) => ({ then(ok) { ok(t(n + 1)); } }); return t(0);`),
    expect: { status: 503, details: TIME_LIMIT, withinMs: WITHIN },
  },
  {
    name: 'a returned object whose getter throws during serialization',
    file: 'then-getter-throws.js',
    code: sync(`return { a: 1, get b() { throw new Error('getter'); } };`),
    expect: { status: 500, details: NOT_SERIALIZABLE, withinMs: WITHIN },
  },
];
