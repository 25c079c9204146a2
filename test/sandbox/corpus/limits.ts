import { expect } from 'vitest';
import { MEMORY_LIMIT, SERVICE_FAILED, TIME_LIMIT, TIMEOUT_MS, svc, type CorpusCase } from './types.ts';

const WITHIN = TIMEOUT_MS + 1500;
const timeLimit = { status: 503, details: TIME_LIMIT, withinMs: WITHIN };
const memoryLimit = { status: 500, details: MEMORY_LIMIT, withinMs: 5000 };

/**
 * The memory bombs' limits: the memory limit must come first, however slow the machine. With the
 * corpus's 500 ms, filling 32 MB raced the time limit on a VM whose page faults cost 11 µs
 * (bench/README.md, Tenants, 2026-12-01) and lost there under CI's load (Node 24).
 */
const BOMB_LIMITS = 'limits: { timeoutMs: 4000, memoryMb: 32 }';

/** Phase 2 of a case answers at once, so `next` shows the service works again. */
const phased = (body: string, opts: { sync?: boolean; limits?: string } = {}) => svc(`if (ctx.query.phase === '2') return { phase: 2 };\n${body}`, opts);
/** After a limit, the service's next call runs on a rebuilt isolate. */
const again = (file: string) => ({ request: { url: `/${file.replace(/\.js$/, '')}?phase=2` }, expect: { status: 200, withinMs: WITHIN } });

/**
 * Limits: every way of not finishing (loops, never-settling promises, microtask chains) ends at
 * the service's time limit with 503; every way of growing the heap at its memory limit with 500.
 */
export const limits: CorpusCase[] = [
  {
    name: 'synchronous infinite loop',
    file: 'lim-loop.js',
    code: phased('for (;;) {}'),
    expect: { ...timeLimit, next: again('lim-loop.js') },
  },
  {
    name: 'infinite loop after an await',
    file: 'lim-loop-await.js',
    code: phased('await Promise.resolve(); for (;;) {}'),
    expect: { ...timeLimit, next: again('lim-loop-await.js') },
  },
  {
    name: 'infinite loop after an awaited host call',
    file: 'lim-loop-hostcall.js',
    code: phased("await hmacSha256Hex('k', 'x'); for (;;) {}"),
    expect: { ...timeLimit, next: again('lim-loop-hostcall.js') },
  },
  {
    name: 'infinite loop at the end of a returned microtask chain',
    file: 'lim-loop-microtask.js',
    code: phased('return Promise.resolve().then(() => Promise.resolve()).then(() => { for (;;) {} });', { sync: true }),
    expect: { ...timeLimit, next: again('lim-loop-microtask.js') },
  },
  {
    name: 'endless microtask chain (each step schedules the next) while the handler waits forever',
    file: 'lim-microtask-spin.js',
    code: phased('const spin = () => { Promise.resolve().then(spin); }; spin(); await new Promise(() => {});'),
    expect: { ...timeLimit, next: again('lim-microtask-spin.js') },
  },
  {
    name: 'a promise that never settles',
    file: 'lim-never.js',
    code: phased('await new Promise(() => {});'),
    expect: { ...timeLimit, next: again('lim-never.js') },
  },
  {
    name: 'work that outlives its call: a microtask chain left running after the handler returned',
    file: 'lim-outlive.js',
    note: 'body `{"returned":true}`; the sandbox processes use < 150 ms CPU in the second after the call limit; the next call answers 200',
    code: phased('const spin = () => { Promise.resolve().then(spin); }; spin(); return { returned: true };', { sync: true }),
    expect: {
      status: 200,
      bodyCheck: (j) => expect(j).toEqual({ returned: true }),
      withinMs: WITHIN,
      idleAfter: true,
      next: again('lim-outlive.js'),
    },
  },
  {
    name: 'work that outlives its call: a loop started in a then() after the handler returned',
    file: 'lim-outlive-loop.js',
    note: 'the sandbox processes use < 150 ms CPU in the second after the call limit; the next call answers 200',
    code: phased('Promise.resolve().then(() => Promise.resolve()).then(() => { for (;;) {} }); return { returned: true };', { sync: true }),
    expect: {
      status: [200, 503],
      withinMs: WITHIN,
      idleAfter: true,
      next: again('lim-outlive-loop.js'),
    },
  },
  {
    name: 'infinite loop in toJSON of the returned value',
    file: 'lim-tojson.js',
    code: phased('return { toJSON() { for (;;) {} } };'),
    expect: { ...timeLimit, next: again('lim-tojson.js') },
  },
  {
    name: 'infinite loop in the toString of a log message',
    file: 'lim-log-tostring.js',
    code: phased('ctx.log.info({ toString() { for (;;) {} } }); return {};'),
    expect: { ...timeLimit, next: again('lim-log-tostring.js') },
  },
  {
    name: 'a loop that tries to survive termination with try/catch/finally',
    file: 'lim-loop-finally.js',
    code: phased('for (;;) { try { for (;;) {} } catch (e) {} finally { continue; } }'),
    expect: { ...timeLimit, next: again('lim-loop-finally.js') },
  },
  {
    name: 'memory bomb: arrays pushed without end',
    file: 'lim-membomb.js',
    code: phased('const a = []; for (;;) a.push(new Array(100000).fill(a.length));', { limits: BOMB_LIMITS }),
    expect: { ...memoryLimit, next: again('lim-membomb.js') },
  },
  {
    name: 'memory bomb after an await',
    file: 'lim-membomb-await.js',
    code: phased("await hmacSha256Hex('k', 'x'); const a = []; for (;;) a.push(new Array(100000).fill(a.length));", { limits: BOMB_LIMITS }),
    expect: { ...memoryLimit, next: again('lim-membomb-await.js') },
  },
  {
    name: 'deep recursion (stack overflow is an ordinary exception)',
    file: 'lim-recursion.js',
    code: phased('const f = (n) => f(n + 1) + 1; return f(0);'),
    expect: { status: 500, details: SERVICE_FAILED, withinMs: WITHIN },
  },
  {
    name: 'output over server.sandbox.max_output_bytes',
    file: 'lim-output.js',
    code: phased("return 'x'.repeat(2 * 1024 * 1024);"),
    expect: { status: 500, details: 'Service output exceeds the limit', withinMs: WITHIN },
  },
];
