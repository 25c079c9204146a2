import { expect } from 'vitest';
import { svc, type CorpusCase } from './types.ts';
import { expectNoHostPaths } from './escapes.ts';

/** Heavy host-call cases get a longer limit: what they test is the errors and the logs, not speed on a busy machine. */
/** Cases that move megabytes: the corpus's longest limit, so a slow machine's page faults (11 µs each on a PVM guest, bench/README.md) do not turn a verdict into a time limit. */
const HEAVY = 'limits: { timeoutMs: 4000, memoryMb: 64 }';
const WITHIN = 4000 + 1500;
/** A request may log a few lines (the request line, one warning); not one per host call. */
const FEW_LOG_LINES = 5;

/** Runs `calls` (an array of thunks) and returns how each ended, so the service answers 200 with the errors. */
const settle = `
async function settle(thunks) {
  const out = await Promise.allSettled(thunks.map((f) => { try { return f(); } catch (e) { return Promise.reject(e); } }));
  return out.map((r) => (r.status === 'fulfilled' ? { ok: r.value } : { error: String(r.reason && r.reason.message) }));
}`;

const errorsOnly = (j: { results: Array<{ ok?: unknown; error?: string }> }, pattern: RegExp) => {
  for (const r of j.results) {
    expect(r.error, JSON.stringify(r)).toMatch(pattern);
  }
};

/**
 * Host calls with junk: wrong types, huge strings, cyclic objects, thousands per request.
 * The service gets a clear error (an Error it can catch, whose message says what was wrong),
 * the kernel neither crashes nor logs one line per call.
 */
export const hostcalls: CorpusCase[] = [
  {
    name: 'crypto helpers with wrong argument types',
    file: 'host-crypto-types.js',
    note: 'each call rejects with a message saying what is wrong (`invalid arguments`, `must be`, `expected`); no host path',
    code: svc(
      `return { results: await settle([
        () => hmacSha256Hex(1, 2),
        () => hmacSha256Hex('k', { length: 3, 0: 'a' }),
        () => hmacSha256Hex(null, undefined),
        () => verifyHmacSha256Hex('k', 'data', 12),
        () => verifyHmacSha256Hex({}, [], { toString() { return 'x'; } }),
      ]) };`,
      { prelude: settle },
    ),
    expect: {
      status: 200,
      maxLogLines: FEW_LOG_LINES,
      bodyCheck: (j, res) => {
        expect(j.results).toHaveLength(5);
        for (const r of j.results) if (r.error !== undefined) expect(r.error).toMatch(/invalid arguments|must be|expected/i);
        expectNoHostPaths(res.body);
      },
    },
  },
  {
    name: 'verifyHmac with a 64 KB signature',
    file: 'host-crypto-bigsig.js',
    note: '`invalid arguments` or `false`',
    code: svc(`return { results: await settle([() => verifyHmacSha256Hex('k', 'data', 'a'.repeat(65536))]) };`, { prelude: settle }),
    expect: { status: 200, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j.results[0]).toMatchObject(j.results[0].error ? { error: expect.stringMatching(/invalid arguments/) } : { ok: false }) },
  },
  {
    name: 'hmac over a 4 MB string',
    file: 'host-crypto-bigstring.js',
    note: 'a digest or an error message',
    code: svc(`return { results: await settle([() => hmacSha256Hex('k', 'x'.repeat(4 << 20))]) };`, { prelude: settle, limits: HEAVY }),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j.results[0].ok ?? j.results[0].error).toEqual(expect.any(String)) },
  },
  {
    name: 'hmac over 1 MB of bytes (base64 on the wire)',
    file: 'host-crypto-bigbytes.js',
    note: 'a digest or an error message',
    code: svc(`return { results: await settle([() => hmacSha256Hex('k', new Uint8Array(1 << 20))]) };`, { prelude: settle, limits: HEAVY }),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j.results[0].ok ?? j.results[0].error).toEqual(expect.any(String)) },
  },
  {
    name: 'hmac 5000 times in one request',
    file: 'host-crypto-many.js',
    note: 'all 5000 digests',
    code: svc(
      `const r = await settle(Array.from({ length: 5000 }, (_, i) => () => hmacSha256Hex('k', String(i))));
      return { ok: r.filter((x) => typeof x.ok === 'string').length };`,
      { prelude: settle, limits: HEAVY },
    ),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j).toEqual({ ok: 5000 }) },
  },
  {
    name: 'crypto with junk arguments 3000 times in one request',
    file: 'host-crypto-junk-many.js',
    note: 'all 3000 reject',
    code: svc(
      `const r = await settle(Array.from({ length: 3000 }, (_, i) => () => hmacSha256Hex(i, { i })));
      return { errors: r.filter((x) => x.error).length };`,
      { prelude: settle, limits: HEAVY },
    ),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j).toEqual({ errors: 3000 }) },
  },
  {
    name: 'publish with wrong argument types',
    file: 'host-publish-types.js',
    note: "each rejects with `invalid arguments`, the getter's own error or `permission`; no host path",
    code: svc(
      `return { results: await settle([
        () => publish(42, { a: 1 }),
        () => publish('/t', undefined),
        () => publish('/t', 1, { priority: 'high', expiration: -5, hasGd: 'yes' }),
        () => publish({ toString() { return '/t'; } }, 1),
        () => publish('/t', 1, { get priority() { throw new Error('getter in options'); } }),
      ]) };`,
      { prelude: settle },
    ),
    expect: {
      status: 200,
      maxLogLines: FEW_LOG_LINES,
      bodyCheck: (j, res) => {
        expect(j.results).toHaveLength(5);
        errorsOnly(j, /invalid arguments|getter in options|permission/i);
        expectNoHostPaths(res.body);
      },
    },
  },
  {
    name: 'publish with cyclic data',
    file: 'host-publish-cyclic.js',
    note: 'each rejects (circular / invalid arguments)',
    code: svc(`const o = { a: 1 }; o.self = o; return { results: await settle([() => publish('/t', o), () => publish('/t', 1, { correlId: o })]) };`, { prelude: settle }),
    expect: { status: 200, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => errorsOnly(j, /circular|cyclic|invalid arguments/i) },
  },
  {
    name: 'publish with a 4 MB string to a topic the service may not publish to',
    file: 'host-publish-big.js',
    note: 'rejects (permission, too large or invalid arguments)',
    code: svc(`return { results: await settle([() => publish('/corpus/denied', 'x'.repeat(4 << 20))]) };`, { prelude: settle, limits: HEAVY }),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => errorsOnly(j, /permission|too large|invalid arguments/i) },
  },
  {
    name: 'publish 2000 times in one request to a topic the service may not publish to: not one log line each',
    file: 'host-publish-flood.js',
    note: 'all 2000 reject',
    code: svc(
      `const r = await settle(Array.from({ length: 2000 }, (_, i) => () => publish('/corpus/denied', { i })));
      return { errors: r.filter((x) => x.error).length };`,
      { prelude: settle, limits: HEAVY },
    ),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j).toEqual({ errors: 2000 }) },
  },
  {
    name: 'publish with junk arguments 2000 times in one request',
    file: 'host-publish-junk-many.js',
    note: 'all 2000 reject',
    code: svc(
      `const r = await settle(Array.from({ length: 2000 }, (_, i) => () => publish(i, null, { priority: i })));
      return { errors: r.filter((x) => x.error).length };`,
      { prelude: settle, limits: HEAVY },
    ),
    expect: { status: 200, withinMs: WITHIN, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j).toEqual({ errors: 2000 }) },
  },
  {
    name: 'host calls left running after the handler returned',
    file: 'host-after-return.js',
    note: 'body `{"returned":true}`',
    code: svc(`for (let i = 0; i < 200; i++) { publish('/corpus/denied', { i }).catch(() => {}); hmacSha256Hex('k', String(i)).catch(() => {}); } return { returned: true };`, {
      sync: true,
    }),
    expect: { status: 200, maxLogLines: FEW_LOG_LINES, bodyCheck: (j) => expect(j).toEqual({ returned: true }) },
  },
];
