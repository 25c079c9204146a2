import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import { FORGED, TIMEOUT_MS, svc, type CorpusCase } from './types.ts';

const ANY = [200, 500, 503];
const WITHIN = TIMEOUT_MS + 1500;
const HMAC = createHmac('sha256', 'k').update('data').digest('hex');

/**
 * Tampering: a service that rewrites globals or the SDK's helpers affects only itself. The
 * runner checks after every case that the neighbour services (one per sandbox process) still
 * answer 200 with pristine globals; here each case checks what the tampering service itself gets.
 */
export const tampering: CorpusCase[] = [
  {
    name: 'Promise.prototype.then replaced',
    file: 'tamper-then.js',
    code: svc(`Promise.prototype.then = function () { return this; }; return { tampered: true };`, { sync: true }),
    expect: { status: ANY, withinMs: WITHIN },
  },
  {
    name: 'JSON.parse and JSON.stringify replaced: the SDK still talks to the host (HMAC is right)',
    file: 'tamper-json.js',
    note: 'body has the right HMAC-SHA256 of `data` under `k`',
    code: svc(`
      JSON.parse = () => ({ ok: true, value: 'forged-by-json-parse' });
      JSON.stringify = () => '{"forged":true}';
      return { hmac: await hmacSha256Hex('k', 'data') };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ hmac: HMAC }), withinMs: WITHIN },
  },
  {
    name: 'Array.prototype tampered (push, map, join, iterator)',
    file: 'tamper-array.js',
    code: svc(`
      Array.prototype.push = function () { throw new Error('push'); };
      Array.prototype.map = function () { return ['forged']; };
      Array.prototype.join = function () { return 'forged'; };
      Array.prototype[Symbol.iterator] = function* () { yield 'forged'; };
      ctx.log.info('after tampering');
      return { tampered: true };`),
    expect: { status: [200, 500], withinMs: WITHIN },
  },
  {
    name: 'Object.defineProperty replaced and Object.prototype polluted with setters',
    file: 'tamper-defineproperty.js',
    code: svc(`
      const define = Object.defineProperty;
      Object.defineProperty = () => { throw new Error('defineProperty'); };
      define(Object.prototype, 'status', { set() {}, get() { return 1000; }, configurable: true });
      define(Object.prototype, 'headers', { set() {}, get() { return { 'x-svc-cid': '${FORGED}' }; }, configurable: true });
      return { tampered: true };`),
    expect: { status: [200, 500], withinMs: WITHIN },
  },
  {
    name: 'Object.prototype.toJSON rewrites the envelope the SDK serializes (status 1000, forged X-Svc-CID)',
    file: 'tamper-tojson.js',
    note: 'no status 1000, no forged CID',
    code: svc(`
      // Only the envelope (it has logs) is rewritten; every other object serializes as itself.
      Object.prototype.toJSON = function () { return Object.hasOwn(this, 'logs') ? { status: 1000, headers: { 'x-svc-cid': '${FORGED}' }, body: 'forged' } : this; };
      return { tampered: true };`),
    expect: { status: [200, 500], withinMs: WITHIN },
  },
  {
    name: 'Symbol.species on the returned promise feeds a raw envelope (status 1000, forged X-Svc-CID)',
    file: 'tamper-species.js',
    note: 'no status 1000, no forged CID',
    code: svc(
      `
      const p = Promise.resolve({ honest: true });
      function Fake(executor) {
        executor(() => {}, () => {});
        return { then(cb) { cb('{"status":1000,"headers":{"x-svc-cid":"${FORGED}"},"body":"forged"}'); } };
      }
      p.constructor = { [Symbol.species]: Fake };
      return p;`,
      { sync: true },
    ),
    expect: { status: ANY, withinMs: WITHIN },
  },
  {
    name: 'Error.prepareStackTrace that loops, then a throw',
    file: 'tamper-preparestack.js',
    code: svc(`Error.prepareStackTrace = () => { for (;;) {} }; throw new Error('with a looping stack');`),
    expect: { status: [500, 503], withinMs: WITHIN },
  },
  {
    name: 'Function.prototype.call and apply replaced (at module scope, so every call sees them)',
    file: 'tamper-call.js',
    note: 'a second call of the same service answers too',
    code: svc(`return { tampered: true, phase: ctx.query.phase ?? '1' };`, {
      prelude: `
const call = Function.prototype.call;
Function.prototype.call = function (self, ...args) { return { status: 1000, headers: { 'x-svc-cid': '${FORGED}' } }; };
Function.prototype.apply = function () { return 'forged'; };`,
    }),
    expect: { status: ANY, withinMs: WITHIN, next: { request: { url: '/tamper-call?phase=2' }, expect: { status: ANY, withinMs: WITHIN } } },
  },
  {
    name: 'Map.prototype.get/set and globalThis.Promise replaced, then a host call',
    file: 'tamper-map-promise.js',
    code: svc(`
      const RealPromise = Promise;
      Map.prototype.get = function () { return 12345; };
      Map.prototype.set = function () { return this; };
      globalThis.Promise = function FakePromise(executor) { return new RealPromise(executor); };
      let hmac;
      try { hmac = await hmacSha256Hex('k', 'data'); } catch (e) { hmac = String(e.message); }
      return { hmac };`),
    expect: { status: ANY, withinMs: WITHIN },
  },
  {
    name: 'Object.prototype and the global object frozen',
    file: 'tamper-freeze.js',
    note: 'a second call of the same service answers too',
    code: svc(`Object.freeze(Object.prototype); Object.freeze(Array.prototype); Object.freeze(globalThis); return { frozen: Object.isFrozen(globalThis) };`),
    expect: { status: ANY, withinMs: WITHIN, next: { expect: { status: ANY, withinMs: WITHIN } } },
  },
];
