#!/usr/bin/env node
// The svc command. Registers the TypeScript loader in this process (no build step), then runs
// the CLI. Sandbox processes, the only ones that load isolated-vm, are started with
// --no-node-snapshot by the kernel itself (kernel/sandbox/pool.ts).
import { register } from 'tsx/esm/api';

register();
await import('../cli/svc.ts');
