import { join } from 'node:path';
import { expect } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { sendControl } from '../../../kernel/control.ts';
import type { CliCommand, CliEnv } from '../../../kernel/plugin.ts';
import { SqliteStore } from '../../../kernel/store/sqlite.ts';
import type { TestKernel } from '../../helpers/kernel.ts';

/** A service that answers with who called it. */
export const WHOAMI = {
  'whoami.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ user: ctx.user ?? null, ...(ctx.input.headers ? { headers: ctx.headers } : {}) }) });\n`,
};

export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
}

/** A channel 401: CID in body and header, the catalogue body shape, nothing from the service. */
export function expectUnauthorized(res: LightMyRequestResponse, challenge: string | undefined): void {
  expect(res.statusCode).toBe(401);
  const body = res.json() as { result: string; cid: string; details: string };
  expect(body).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: 'Unauthorized' });
  expect(body.cid).toMatch(/^[0-9a-f]{22}$/);
  expect(res.headers['www-authenticate']).toBe(challenge);
}

/**
 * Runs a plugin CLI command the way `svc` does: secret on stdin, the running server
 * reached through its control socket, the store opened only when no server answers.
 */
export async function runCli(
  k: TestKernel,
  command: CliCommand,
  args: string[],
  stdin: string,
): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const env: CliEnv = {
    config: k.kernel.configStore.current(),
    configPath: k.configPath,
    openApiFragments: () => [],
    contributions: () => [],
    serviceMetas: async () => new Map(),
    openStore: async () => new SqliteStore(join(k.kernel.dataDir, 'svc.db')),
    control: (op, a) => sendControl(join(k.kernel.dataDir, 'control.sock'), op, a),
    readStdin: async () => stdin,
    out: (line) => void out.push(line),
    err: (line) => void err.push(line),
  };
  const code = await command.run(args, env);
  return { code, out, err };
}
