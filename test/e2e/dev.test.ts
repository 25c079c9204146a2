import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SVC_BIN, makeProject } from '../helpers/cli.ts';
import { waitFor } from '../helpers/wait.ts';

const config = `
server:
  host: 127.0.0.1
  port: 17010
  data_dir: ./data
  services_dir: ./services
  sandbox: { workers: 1 }
channel_rest:
  - name: hello
    url_path: /hello/{name}
    service: hello
    method: GET
    security: none
  - { name: boom, url_path: /boom, service: boom, security: none }
`;

const hello = (greeting: string) => `import { service, t } from 'svc/sdk';
export default service({
  input: { name: t.string() },
  handle: (ctx) => ({ greeting: '${greeting}, ' + ctx.input.name }),
});
`;
// The syntax error is on line 4, column 28 of the source.
const broken = `import { service, t } from 'svc/sdk';
type Unused = { a: number };
export default service({
  handle: (ctx) => ({ oops: ; }),
});
`;
// Types first: the throwing line is line 8 of the source, not of esbuild's output.
const boom = `import { service } from 'svc/sdk';

interface Order {
  lines?: Array<{ qty: number }>;
}

function firstQty(order: Order): number {
  return order.lines![0]!.qty;
}

export default service({ handle: () => ({ qty: firstQty({}) }) });
`;

let proc: ChildProcess;
let dir: string;
let out = '';
let url = '';
let exited: Promise<number | null>;

beforeAll(async () => {
  dir = makeProject(config, { 'hello.ts': hello('Hello'), 'boom.ts': boom });
  proc = spawn(process.execPath, [SVC_BIN, 'dev', '--config', 'config/svc.yaml'], {
    cwd: dir,
    env: { ...process.env, SVC_PORT: '0', SVC_ADMIN_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
  url = (await waitFor('the dev banner', () => /svc dev: channels on (http:\/\/[\d.:]+),/.exec(out)?.[1] ?? (proc.exitCode !== null && `exited: ${out}`), 30_000))!;
  expect(url).toMatch(/^http/);
});
afterAll(() => {
  if (proc.exitCode === null) proc.kill('SIGKILL');
});

const since = (mark: number) => out.slice(mark);

/** `svc dev` over a real socket: readable logs, service errors at their source lines, hot deploys. */
describe('svc dev', () => {
  it('prints one banner line with the channel URL, the admin URL and what it watches', () => {
    expect(out).toMatch(/svc dev: channels on http:\/\/127\.0\.0\.1:\d+, admin on http:\/\/127\.0\.0\.1:\d+; watching services\/ and config\/svc\.yaml \(Ctrl-C stops\)\n/);
  });

  it('serves requests and logs them for people: no JSON, one compact access line', async () => {
    const res = await fetch(`${url}/hello/Ada`);
    expect(await res.json()).toEqual({ greeting: 'Hello, Ada' });
    await waitFor('the access line', () => /INFO: 200 GET \/hello\/Ada \(hello, [\d.]+ ms, cid \w+\)/.test(out));
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: deployed services\/hello\.ts$/m);
    expect(out).not.toMatch(/^\{"level"/m);
  });

  it('reports a broken save at services/<file>:line:col and keeps serving the last good version', async () => {
    const mark = out.length;
    writeFileSync(join(dir, 'services', 'hello.ts'), broken);
    await waitFor('the compile error', () => since(mark).includes('services/hello.ts:4:'));
    expect(since(mark)).toMatch(/ERROR: service failed to compile; the last good version stays deployed\n {4}services\/hello\.ts:4:28: Unexpected ";"/);
    expect(await (await fetch(`${url}/hello/Bo`)).json()).toEqual({ greeting: 'Hello, Bo' });
  });

  it('deploys the fixed file on save', async () => {
    const mark = out.length;
    writeFileSync(join(dir, 'services', 'hello.ts'), hello('Hi'));
    await waitFor('the redeploy', () => since(mark).includes('deployed services/hello.ts'));
    expect(await (await fetch(`${url}/hello/Cy`)).json()).toEqual({ greeting: 'Hi, Cy' });
  });

  it('reports a refused config save one problem per line, under the file, and keeps serving', async () => {
    const mark = out.length;
    const file = join(dir, 'config', 'svc.yaml');
    writeFileSync(file, `${config}  - { name: bad, url_path: nope, service: hello }\n`);
    await waitFor('the refusal', () => since(mark).includes('config change refused'));
    expect(since(mark)).toMatch(/ERROR: config\/svc\.yaml: config change refused; the running config stays\n {4}channel_rest\[\d+\]\.url_path: must start with \/\n {4}channel_rest\[\d+\]\.security: required/);
    expect(await (await fetch(`${url}/hello/Di`)).json()).toEqual({ greeting: 'Hi, Di' });
    writeFileSync(file, config);
    await waitFor('the config applied again', () => since(mark).includes('config applied'));
  });

  it("shows a service's exception with its stack frames in the service file", async () => {
    const mark = out.length;
    expect((await fetch(`${url}/boom`)).status).toBe(500);
    await waitFor('the exception', () => since(mark).includes('boom raised'));
    expect(since(mark)).toMatch(/ERROR: boom raised TypeError: Cannot read properties of undefined \(reading '0'\)\n {4}at firstQty \(services\/boom\.ts:8:\d+\)\n {4}at Object\.handle \(services\/boom\.ts:11:\d+\)/);
  });

  it('stops on SIGTERM with exit 0', async () => {
    proc.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
