import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // What kernel/plugin-sdk-resolve.ts does under `svc start`: vitest resolves imports of the
    // files it runs itself, past Node's resolve hooks, so third-party plugins get the same SDK here.
    alias: [{ find: /^svc\/sdk\/plugin$/, replacement: fileURLToPath(new URL('./sdk/plugin/index.ts', import.meta.url)) }],
  },
  test: {
    // Only the repository's own tests: services/*.test.ts are services' tests, run by `svc test`
    // (test/e2e/svc-test.test.ts runs them that way).
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Some suites load isolated-vm in the test process itself, which needs this on every Node line.
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file starts its own sandbox processes; two at a time fit two cores.
    maxWorkers: 2,
  },
});
