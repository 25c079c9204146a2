#!/usr/bin/env -S node --max-semi-space-size=32
// The svc command. Registers the TypeScript loader in this process (no build step), then runs
// the CLI. Sandbox processes, the only ones that load isolated-vm, are started with
// --no-node-snapshot by the kernel itself (kernel/sandbox/pool.ts).
// The flag on the first line gives the kernel a 32 MB young generation (semi-space) where V8's
// default is 16 MB: a request's objects then die young instead of being copied and promoted,
// worth about 15% of channel throughput (docs/decisions/performance.md). `npm start` passes it
// too; `node bin/svc.js` without it runs with V8's default.
import { register } from 'tsx/esm/api';

register();
await import('../cli/svc.ts');
