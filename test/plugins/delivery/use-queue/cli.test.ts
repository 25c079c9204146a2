import { rmSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../../helpers/cli.ts';

/** `svc queue ...` by the real binary: through the running server's control socket, then with no server. */

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
channel_rest:
  - { name: hook, url_path: /hook, service: hook, security: none, use_queue: true, delivery: { max_attempts: 1 } }
`;
const HOOK = { 'hook.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => { throw new Error('refused ' + ctx.input.why); } });\n` };

const cli = (dir: string, args: string[]) => runCli([...args, '--config', 'config/svc.yaml'], dir);

interface Listed {
  id: number;
  state: string;
  cid: string;
  errorCount: number;
  lastError: { message: string } | null;
}

let dir: string | undefined;
let server: CliServer | undefined;
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('svc queue (real processes)', () => {
  it('lists, shows, replays and deletes through the running server; lists and shows from the store without one', async () => {
    dir = makeProject(CONFIG, HOOK);
    server = await startCli(dir);
    const cids: string[] = [];
    for (const why of ['alpha', 'beta']) {
      const res = await request(`${server.url}/hook`, { method: 'POST', body: JSON.stringify({ why }), headers: { 'content-type': 'application/json' } });
      expect(res.statusCode).toBe(200);
      cids.push(((await res.body.json()) as { cid: string }).cid);
    }
    let dead: Listed[] = [];
    for (let i = 0; i < 20 && dead.length < 2; i++) {
      const r = cli(dir, ['queue', 'list', '--state', 'dead', '--json']);
      expect(r.status).toBe(0);
      dead = JSON.parse(r.stdout) as Listed[];
    }
    expect(dead.map((e) => [e.cid, e.lastError?.message])).toEqual([
      [cids[0], 'Error: refused alpha'],
      [cids[1], 'Error: refused beta'],
    ]);

    // The exception's kind is said once, not `Error: Error: refused alpha`.
    const listed = cli(dir, ['queue', 'list', '--state', 'dead']).stdout;
    expect(listed).toContain('  last error: Error: refused alpha\n');
    expect(listed).not.toContain('Error: Error:');

    const shown = cli(dir, ['queue', 'show', String(dead[0]!.id)]);
    expect(shown.status).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: dead[0]!.id, channel: 'hook', state: 'dead', errors: [{ attempt: 1, kind: 'Error', message: 'Error: refused alpha' }] });

    expect(JSON.parse(cli(dir, ['queue', 'list', '--service', 'hook', '--state', 'dead', '--json']).stdout)).toHaveLength(2);
    expect(JSON.parse(cli(dir, ['queue', 'list', '--service', 'other', '--json']).stdout)).toEqual([]);
    // Against a version that does not serve: refused, nothing replayed.
    expect(cli(dir, ['queue', 'replay', '--all', '--service', 'hook', '--version', '2'])).toMatchObject({ status: 1, stderr: expect.stringContaining("version 2 of 'hook' is not serving (version 1 serves)") });
    expect(cli(dir, ['queue', 'replay', '--error', 'alpha', '--channel', 'hook', '--version', '1'])).toMatchObject({ status: 0, stdout: `replayed 1 event(s) against version 1: #${dead[0]!.id}\n` });
    expect(cli(dir, ['queue', 'delete', '--all', '--version', '1'])).toMatchObject({ status: 2, stderr: expect.stringMatching(/usage: svc queue delete/) });
    expect(cli(dir, ['queue', 'delete', String(dead[1]!.id)])).toMatchObject({ status: 0, stdout: `deleted 1 event(s): #${dead[1]!.id}\n` });
    expect(cli(dir, ['queue', 'replay'])).toMatchObject({ status: 2, stderr: expect.stringMatching(/name one event[\s\S]*usage: svc queue replay/) });

    expect(await server.stop()).toBe(0);
    const offline = cli(dir, ['queue', 'list']);
    expect(offline.status).toBe(0);
    expect(offline.stdout).toMatch(new RegExp(`^#${dead[0]!.id}  hook  hook  \\w+  attempts \\d+  received \\S+.*cid ${cids[0]}`));
    expect(offline.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(cli(dir, ['queue', 'show', String(dead[0]!.id)]).stdout)).toMatchObject({ cid: cids[0] });
    expect(cli(dir, ['queue', 'delete', '--all'])).toMatchObject({ status: 1, stderr: expect.stringMatching(/no server is running/) });
  }, 120_000);
});
