import { CRASHED, MEMORY_LIMIT, svc as service, type CorpusCase } from './types.ts';

/**
 * A longer time limit than the other cases: the crash (or the memory limit) must come first. Alone
 * the split crashes in under a second here; beside the rest of the suite, on a VM whose page faults
 * cost 11 µs (bench/README.md, Tenants, 2026-12-01), making its 256 MB string took over 4 s once.
 */
const svc = (body: string) => service(body, { limits: 'limits: { timeoutMs: 10000, memoryMb: 32 }' });

/** Where V8 decides: the isolate's memory limit may catch the allocation before the process dies. */
const crashOrLimit = { status: [503, 500], details: new RegExp(`^(${CRASHED}|${MEMORY_LIMIT})$`), withinMs: 11_000 };

/**
 * Crashes: inputs that kill the whole sandbox process (V8 fatal errors that isolated-vm's
 * memory limit does not catch). That call gets 503 (or 500 memory limit), never a hang; the
 * runner checks that neighbour services answer 200 right after, and spaces these cases out.
 */
export const crashes: CorpusCase[] = [
  {
    name: "'1'.repeat(0xfffffff).split('')",
    file: 'crash-split.js',
    code: svc("return '1'.repeat(0xfffffff).split('').length;"),
    expect: crashOrLimit,
  },
  {
    name: 'new Array(60e6).fill(0)',
    file: 'crash-array.js',
    code: svc('return new Array(60e6).fill(0).length;'),
    expect: crashOrLimit,
  },
  {
    name: 'a Map filled without bound',
    file: 'crash-map.js',
    code: svc('const m = new Map(); for (let i = 0; ; i++) m.set(i, i);'),
    expect: crashOrLimit,
  },
  {
    name: 'a huge JSON.parse',
    file: 'crash-json.js',
    code: svc("return JSON.parse('\"' + 'a'.repeat(1 << 28) + '\"').length;"),
    expect: crashOrLimit,
  },
  {
    name: "'1'.repeat(0xfffffff).split('') after an awaited host call",
    file: 'crash-split-await.js',
    code: svc("await hmacSha256Hex('k', 'x'); return '1'.repeat(0xfffffff).split('').length;"),
    expect: crashOrLimit,
  },
];
