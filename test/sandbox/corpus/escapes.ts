import { tmpdir } from 'node:os';
import { expect } from 'vitest';
import { SERVICE_FAILED, svc, type CorpusCase } from './types.ts';

/** Text that must never appear in what a service can see: host paths of the server and its files. */
export function expectNoHostPaths(text: string): void {
  for (const leak of [process.cwd(), tmpdir(), 'node_modules', '/home/', '/root/', 'kernel/sandbox', 'isolated-vm', '.ts:']) {
    expect(text, `leaks ${leak}`).not.toContain(leak);
  }
}

/** Escapes: a service reaches nothing of the host: no Node globals, no bridge, no modules, no paths. */
export const escapes: CorpusCase[] = [
  {
    name: 'no Node globals (process, require, module, Buffer, global)',
    file: 'esc-globals.js',
    note: 'every one is `undefined`',
    code: svc(`return { process: typeof process, require: typeof require, module: typeof module, exports: typeof exports, Buffer: typeof Buffer, global: typeof global, gp: typeof globalThis.process, filename: typeof __filename };`),
    expect: {
      status: 200,
      bodyCheck: (j) => expect(j).toEqual({ process: 'undefined', require: 'undefined', module: 'undefined', exports: 'undefined', Buffer: 'undefined', global: 'undefined', gp: 'undefined', filename: 'undefined' }),
    },
  },
  {
    name: 'the host bridge (__svc_send, __svc_done, __svc_runtime) is gone from the global object',
    file: 'esc-bridge.js',
    note: 'no global named `__*`, `svc`, `ivm`, `isolat*`; the three bridge names are `undefined`',
    code: svc(`
      const names = Reflect.ownKeys(globalThis).map(String).filter((n) => /^__|svc|ivm|isolat/i.test(n));
      return { names, send: typeof globalThis.__svc_send, done: typeof globalThis.__svc_done, runtime: typeof globalThis.__svc_runtime };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ names: [], send: 'undefined', done: 'undefined', runtime: 'undefined' }) },
  },
  {
    name: "constructor.constructor('return process')() reaches only the isolate",
    file: 'esc-ctor.js',
    note: 'Function constructors reached from ctx, the log and arrows see no `process`/`require`; `this` is the isolate global',
    code: svc(`
      const viaCtx = ctx.constructor.constructor('return typeof process')();
      const viaLog = ctx.log.info.constructor('return typeof require')();
      const viaArrow = (() => 0).constructor('return this')();
      const viaAsync = await (async () => 0).constructor('return typeof process')();
      return { viaCtx, viaLog, same: viaArrow === globalThis, viaAsync, p: typeof viaArrow.process };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ viaCtx: 'undefined', viaLog: 'undefined', same: true, viaAsync: 'undefined', p: 'undefined' }) },
  },
  {
    name: 'eval-based tricks see only the isolate',
    file: 'esc-eval.js',
    note: 'direct and indirect eval and `new Function` see no `process`/`require`',
    code: svc(`
      const direct = eval('typeof process');
      const indirect = (0, eval)('this') === globalThis;
      const req = (0, eval)('typeof require');
      const fn = new Function('return typeof process + "/" + typeof require')();
      const sloppy = (0, eval)('(function(){ return this })()') === globalThis;
      return { direct, indirect, req, fn, sloppy };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ direct: 'undefined', indirect: true, req: 'undefined', fn: 'undefined/undefined', sloppy: true }) },
  },
  {
    name: "dynamic import('node:fs') in the service source is refused (at deploy, or rejected at run time)",
    file: 'esc-import-static.js',
    note: '200 with the import rejected inside the service, or 500 not deployed; no host path in the answer',
    code: svc(`
      try {
        const m = await import('node:fs');
        return { loaded: Object.keys(m).slice(0, 5) };
      } catch (e) {
        return { refused: true, message: String(e && e.message) };
      }`),
    expect: {
      status: [200, 500],
      bodyCheck: (j, res) => {
        if (res.status === 200) expect(j.refused, JSON.stringify(j)).toBe(true);
        else expect(j.details).toMatch(/not deployed|import/i);
        expectNoHostPaths(res.body);
      },
    },
  },
  {
    name: 'dynamic import hidden from static analysis (built with Function/eval) is rejected at run time',
    file: 'esc-import-dynamic.js',
    note: 'none of node:fs, fs, node:child_process, file:///etc/passwd, svc/sdk, data:, ../../kernel loads; no host path in the messages',
    code: svc(`
      const specifiers = ['node:fs', 'fs', 'node:child_process', 'file:///etc/passwd', 'svc/sdk', 'data:text/javascript,export default 1', '../../kernel/kernel.ts'];
      const loaded = [];
      const messages = [];
      for (const s of specifiers) {
        try {
          const m = await new Function('s', 'return import(s)')(s);
          loaded.push(s + ':' + Object.keys(m).length);
        } catch (e) {
          messages.push(String(e && e.message));
        }
        try {
          await (0, eval)('import(' + JSON.stringify(s) + ')');
          loaded.push('eval ' + s);
        } catch (e) {
          messages.push(String(e && e.message));
        }
      }
      return { loaded, messages };`),
    expect: {
      status: 200,
      bodyCheck: (j, res) => {
        expect(j.loaded).toEqual([]);
        expectNoHostPaths(res.body);
      },
    },
  },
  {
    name: 'WebAssembly, SharedArrayBuffer and Atomics are absent',
    file: 'esc-wasm.js',
    note: 'all `undefined`, not own properties of the global',
    code: svc(`
      return {
        wasm: typeof WebAssembly, sab: typeof SharedArrayBuffer, atomics: typeof Atomics,
        own: Object.getOwnPropertyNames(globalThis).filter((n) => /WebAssembly|SharedArrayBuffer|Atomics/.test(n)),
      };`),
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ wasm: 'undefined', sab: 'undefined', atomics: 'undefined', own: [] }) },
  },
  {
    name: 'no timers and no network (setTimeout, setInterval, setImmediate, fetch, XMLHttpRequest, WebSocket)',
    file: 'esc-timers.js',
    note: 'all `undefined`',
    code: svc(`
      return { setTimeout: typeof setTimeout, setInterval: typeof setInterval, setImmediate: typeof setImmediate, fetch: typeof fetch, xhr: typeof XMLHttpRequest, ws: typeof WebSocket };`),
    expect: {
      status: 200,
      bodyCheck: (j) => expect(j).toEqual({ setTimeout: 'undefined', setInterval: 'undefined', setImmediate: 'undefined', fetch: 'undefined', xhr: 'undefined', ws: 'undefined' }),
    },
  },
  {
    name: 'Error stacks and call sites name no host file paths',
    file: 'esc-stack.js',
    note: 'stacks, messages and CallSite file names name no host path (cwd, tmpdir, node_modules, /home, /root, .ts sources)',
    code: svc(`
      const out = { stacks: [], files: [] };
      out.stacks.push(new Error('here').stack);
      try { null.x; } catch (e) { out.stacks.push(e.stack); }
      try { await hmacSha256Hex(1, 2); } catch (e) { out.stacks.push(String(e.stack), String(e.message)); }
      const cyclic = {}; cyclic.self = cyclic;
      try { await publish('/t', cyclic); } catch (e) { out.stacks.push(String(e.stack)); }
      const saved = Error.prepareStackTrace;
      Error.prepareStackTrace = (e, sites) => sites.map((s) => [s.getFileName(), s.getScriptNameOrSourceURL && s.getScriptNameOrSourceURL(), String(s.getEvalOrigin && s.getEvalOrigin())]);
      out.files.push(new Error('sites').stack);
      try { await hmacSha256Hex(1, 2); } catch (e) { out.files.push(e.stack); }
      Error.prepareStackTrace = saved;
      return out;`),
    expect: { status: 200, bodyCheck: (_j, res) => expectNoHostPaths(res.body) },
  },
  {
    name: "a thrown error's message and stack stay in the log: the client gets the generic 500",
    file: 'esc-throw.js',
    code: svc(`throw new Error('secret detail ' + new Error().stack);`),
    expect: { status: 500, details: SERVICE_FAILED },
  },
  {
    name: "the SDK module exports no host function (callHost, runtime internals)",
    file: 'esc-sdk-exports.js',
    note: 'no export named like callHost, runtime, dispatch, send, register',
    code: `import * as sdk from 'svc/sdk';
import { service } from 'svc/sdk';
export default service({ limits: { timeoutMs: 500, memoryMb: 32 }, handle() {
  const names = Object.keys(sdk);
  return { internal: names.filter((n) => /callHost|runtime|dispatch|send|register|resolveHostCall/i.test(n)) };
} });
`,
    expect: { status: 200, bodyCheck: (j) => expect(j).toEqual({ internal: [] }) },
  },
];
