import type { CorpusCase } from './types.ts';

const NOT_DEPLOYED = /not deployed/i;
const LIMITS = 'limits: { timeoutMs: 500, memoryMb: 32 }';
const handler = `export default service({ ${LIMITS}, handle() { return { deployed: true }; } });`;
const withTop = (top: string) => `import { service } from 'svc/sdk';\n${top}\n${handler}\n`;

/**
 * Deploy: a service file whose top-level code throws, loops or crashes is written while the
 * server runs. The deploy is refused with an error (within a few seconds, whatever the code
 * does), the channel answers 500 'not deployed', and the server keeps serving everyone else.
 */
function refused(name: string, file: string, code: string, error: RegExp = /./, withinMs = 6000): CorpusCase {
  return {
    name,
    file,
    code,
    hotDeploy: { error, withinMs },
    expect: { status: 500, details: NOT_DEPLOYED, withinMs: 2000 },
  };
}

export const deploy: CorpusCase[] = [
  refused('top-level throw', 'dep-throw.js', withTop("throw new Error('boom at deploy');"), /dep-throw\.js:\d+:\d+: .*boom at deploy/),
  refused('top-level synchronous infinite loop', 'dep-loop.js', withTop('for (;;) {}')),
  refused('top-level await, then an infinite loop', 'dep-await-loop.js', withTop('await Promise.resolve(); for (;;) {}')),
  refused('top-level microtask that loops (no await)', 'dep-microtask-loop.js', withTop('Promise.resolve().then(() => { for (;;) {} });')),
  refused('top-level await that never settles', 'dep-await-never.js', withTop('await new Promise(() => {});')),
  refused('top-level memory bomb', 'dep-membomb.js', withTop('const a = []; for (;;) a.push(new Array(100000).fill(a.length));')),
  refused('top-level V8 fatal crash of the sandbox process', 'dep-crash.js', withTop("globalThis.x = '1'.repeat(0xfffffff).split('');")),
  refused('top-level throw of a non-Error whose toString loops', 'dep-throw-tostring.js', withTop('throw { toString() { for (;;) {} } };')),
  refused('Error.prepareStackTrace that loops, then a top-level throw', 'dep-preparestack.js', withTop("Error.prepareStackTrace = () => { for (;;) {} };\nthrow new Error('x');")),
  refused(
    'default export whose handle getter loops',
    'dep-getter-loop.js',
    `import { service } from 'svc/sdk';\nexport default { ${LIMITS}, get handle() { for (;;) {} } };\n`,
  ),
  refused(
    'default export that is a Proxy looping in every trap',
    'dep-proxy.js',
    `const loop = () => { for (;;) {} };\nexport default new Proxy({}, { get: loop, has: loop, ownKeys: loop, getOwnPropertyDescriptor: loop });\n`,
  ),
  refused('default export that is not a service', 'dep-not-service.js', 'export default 42;\n', /export default service/),
];
