import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../../helpers/cli.ts';
import { basic, WHOAMI } from '../support.ts';

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
security:
  - { name: crm, type: basic_auth, username: crm, password: from-config }
channel_rest:
  - { name: crm, url_path: /crm, service: whoami, security: crm }
`;

const servers: CliServer[] = [];
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop('SIGKILL');
});

async function status(server: CliServer, password: string): Promise<number> {
  const res = await request(`${server.url}/crm`, { headers: { authorization: basic('crm', password) } });
  await res.body.dump();
  return res.statusCode;
}

describe('svc secdef set-password (real processes)', () => {
  it('rotates the password of the running server from stdin or a file, and the rotation survives a restart', async () => {
    const dir = makeProject(CONFIG, WHOAMI);
    const server = await startCli(dir);
    servers.push(server);
    expect(await status(server, 'from-config')).toBe(200);

    const fromStdin = runCli(['secdef', 'set-password', 'crm', '--config', 'config/svc.yaml'], dir, 'rotated-1\n');
    expect(fromStdin).toMatchObject({ status: 0, stderr: '' });
    expect(await status(server, 'rotated-1')).toBe(200);
    expect(await status(server, 'from-config')).toBe(401);

    writeFileSync(join(dir, 'pw.txt'), 'rotated:2\n');
    expect(runCli(['secdef', 'set-password', 'crm', '--file', 'pw.txt', '--config', 'config/svc.yaml'], dir).status).toBe(0);
    expect(await status(server, 'rotated:2')).toBe(200);
    expect(await status(server, 'rotated-1')).toBe(401);

    const onArgv = runCli(['secdef', 'set-password', 'crm', 'rotated-3', '--config', 'config/svc.yaml'], dir, 'x');
    expect(onArgv.status).toBe(2);
    expect(onArgv.stderr).toContain('never from arguments');

    expect(await server.stop()).toBe(0);
    for (const secret of ['from-config', 'rotated-1', 'rotated:2']) expect(server.output()).not.toContain(secret);

    const restarted = await startCli(dir);
    servers.push(restarted);
    expect(await status(restarted, 'rotated:2')).toBe(200);
    expect(await status(restarted, 'from-config')).toBe(401);
    await restarted.stop();
    // Two server starts and three CLI runs, each a process loading TypeScript: 30 s ran out once on a loaded CI machine.
  }, 120_000);
});
