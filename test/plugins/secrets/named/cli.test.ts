import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../../helpers/cli.ts';

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
secrets:
  - { name: hook, services: [signer] }
  - { name: spare, value: spare-value-from-the-config-file }
channel_rest:
  - { name: signer, url_path: /sign, service: signer, method: POST, data_format: none, security: none }
`;

const SIGNER = {
  'signer.ts': `import { secret, service } from 'svc/sdk';\nexport default service({ POST: async (ctx) => ({ sig: await secret('hook').hmacSha256Hex(ctx.rawBody) }) });\n`,
};

const OFFLINE_VALUE = 'offline-value-3b9f-typed-into-stdin';
const ONLINE_VALUE = 'online-value-77aa-piped-to-the-running-server';
const cli = (dir: string, args: string[], stdin?: string) => runCli([...args, '--config', 'config/svc.yaml'], dir, stdin);
const hmacHex = (key: string, data: string) => createHmac('sha256', key).update(data).digest('hex');

/** Each step is a real process (nine CLI runs and two server starts in the first test): slow on a busy machine. */
const REAL_PROCESSES_MS = 120_000;

const servers: CliServer[] = [];
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop('SIGKILL');
});

async function signature(server: CliServer, body: string): Promise<unknown> {
  const res = await request(`${server.url}/sign`, { method: 'POST', body });
  return res.body.json();
}

describe('svc secret set / list (real processes)', () => {
  it('sets a value with no server running and with one, from stdin only, and never prints a value', async () => {
    const dir = makeProject(CONFIG, SIGNER);
    const printed: string[] = [];
    const run = (args: string[], stdin?: string) => {
      const r = cli(dir, args, stdin);
      printed.push(r.stdout, r.stderr);
      return r;
    };

    expect(run(['secret', 'list']).stdout).toMatch(/hook\s+not set \(svc secret set hook\); services: signer\nspare\s+config file \(applied when the server next starts or reloads\); services: none/);
    expect(run(['secret', 'set', 'hook'], `${OFFLINE_VALUE}\n`)).toMatchObject({ status: 0, stderr: '', stdout: expect.stringMatching(/stored encrypted; no server is running/) });
    expect(run(['secret', 'list']).stdout).toMatch(/hook\s+set with the CLI \(\d{4}-[^)]+\); services: signer/);

    const server = await startCli(dir);
    servers.push(server);
    expect(await signature(server, 'payload')).toEqual({ sig: hmacHex(OFFLINE_VALUE, 'payload') });

    expect(run(['secret', 'set', 'hook'], ONLINE_VALUE)).toMatchObject({ status: 0, stderr: '', stdout: expect.stringMatching(/the running server uses it now/) });
    expect(await signature(server, 'payload')).toEqual({ sig: hmacHex(ONLINE_VALUE, 'payload') });
    expect(run(['secret', 'list']).stdout).toMatch(/spare\s+config file \(\d{4}-/);

    const onArgv = run(['secret', 'set', 'hook', 'value-on-the-command-line'], 'x');
    expect(onArgv.status).toBe(2);
    expect(onArgv.stderr).toMatch(/never from arguments/);
    expect(run(['secret', 'set', 'nope'], 'x')).toMatchObject({ status: 2, stderr: expect.stringMatching(/no secret named 'nope'/) });
    expect(run(['secret', 'set', 'hook'], '\n')).toMatchObject({ status: 2, stderr: expect.stringMatching(/the value must not be empty/) });

    expect(await server.stop()).toBe(0);
    const restarted = await startCli(dir);
    servers.push(restarted);
    expect(await signature(restarted, 'again')).toEqual({ sig: hmacHex(ONLINE_VALUE, 'again') });
    expect(await restarted.stop()).toBe(0);

    const everything = [...printed, server.output(), restarted.output()].join('\n');
    for (const value of [OFFLINE_VALUE, ONLINE_VALUE, 'spare-value-from-the-config-file']) expect(everything).not.toContain(value);
    for (const file of readdirSync(join(dir, 'data')).filter((f) => f.startsWith('svc.db'))) {
      expect(readFileSync(join(dir, 'data', file)).includes(Buffer.from(ONLINE_VALUE)), file).toBe(false);
    }
  }, REAL_PROCESSES_MS);

  it('refuses to store offline under a vault key that does not open what is stored', async () => {
    const dir = makeProject(CONFIG, SIGNER);
    expect(cli(dir, ['secret', 'set', 'hook'], 'first').status).toBe(0);
    const saved = process.env.SVC_VAULT_KEY;
    process.env.SVC_VAULT_KEY = randomBytes(32).toString('base64');
    try {
      expect(cli(dir, ['secret', 'set', 'hook'], 'second')).toMatchObject({ status: 1, stderr: expect.stringMatching(/vault key here does not open the secrets already stored/) });
    } finally {
      if (saved === undefined) delete process.env.SVC_VAULT_KEY;
      else process.env.SVC_VAULT_KEY = saved;
    }
  }, REAL_PROCESSES_MS);
});
