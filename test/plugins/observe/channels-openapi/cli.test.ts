import { afterAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../../helpers/cli.ts';
import { openApiProblems } from '../../../helpers/openapi.ts';

/** `svc openapi --channels`: with no server running (built offline), and against a running one. */

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
  admin: { enabled: false }
channel_rest:
  - { name: hello, url_path: '/hello/{name}', service: hello, security: none, method: GET }
`;
const HELLO = `import { service, t } from 'svc/sdk';\nexport default service({ input: { name: t.string(), times: t.integer({ default: 1, description: 'How many times' }) }, handle: (ctx) => ({ hello: ctx.input.name }) });\n`;

let server: CliServer | undefined;
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop('SIGKILL');
});

type Json = Record<string, any>;

describe('svc openapi --channels', () => {
  it('prints the document offline, from the config file and the compiled services, and the same one from a running server', async () => {
    const dir = makeProject(CONFIG, { 'hello.ts': HELLO });
    const offline = runCli(['openapi', '--channels'], dir);
    expect(offline.status, offline.stderr).toBe(0);
    const doc = JSON.parse(offline.stdout) as Json;
    expect(openApiProblems(doc)).toEqual([]);
    expect(doc.paths['/hello/{name}'].get.parameters).toEqual([
      { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'times', in: 'query', required: false, schema: { type: 'integer', default: 1 }, description: 'How many times' },
    ]);

    server = await startCli(dir);
    const live = runCli(['openapi', '--channels'], dir);
    expect(live.status, live.stderr).toBe(0);
    expect(JSON.parse(live.stdout)).toEqual(doc);
    const served = (await (await fetch(`${server.url}/svc/channels/openapi.json`)).json()) as Json;
    expect(served).toEqual(doc);
    // The pub/sub command is still `svc openapi`.
    expect(Object.keys((JSON.parse(runCli(['openapi'], dir).stdout) as Json).paths)).toContain('/svc/pubsub/topic/{topic_name}');
  }, 90_000);

  it('refuses extra arguments with exit 2', () => {
    const r = runCli(['openapi', '--channels', 'extra'], makeProject(CONFIG, { 'hello.ts': HELLO }));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('usage: svc openapi --channels');
  });
});
