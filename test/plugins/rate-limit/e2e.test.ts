import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/platform/clock.ts';
import { sendControl } from '../../../kernel/control.ts';
import type { CliEnv } from '../../../kernel/plugin.ts';
import { clearCommand } from '../../../plugins/rate-limit/clear.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };

const PARTNER = `Basic ${Buffer.from('partner:partner-pass-1').toString('base64')}`;
const DROP_LINE = 'connection dropped: client disallowed by rate_limiting';

const channels = `
security:
  - { name: partner, type: basic_auth, username: partner, password: partner-pass-1,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 3, limit_unit: day }] }] }
channel_rest:
  - { name: capped, url_path: /capped, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 10, limit_unit: day }] }] }
  - { name: closed, url_path: /closed, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, disallowed: true }] }] }
  - name: guarded
    url_path: /guarded
    service: echo
    security: none
    rate_limiting:
      - cidr_list: [203.0.113.0/24]
        time_range: [{ is_all_day: true, disallowed: true }]
      - time_range: [{ is_all_day: true }]
  - name: secured
    url_path: /secured
    service: echo
    security: partner
    rate_limiting:
      - cidr_list: [127.0.0.0/8, '::1']
        time_range: [{ is_all_day: true, disallowed: true }]
      - time_range: [{ is_all_day: true }]
`;

let k: TestKernel;
let base: string;
let port: number;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  k = await startKernel({ config: channels, services: ECHO, clock: new ManualClock(Date.UTC(2026, 0, 1, 12)), listen: true, logs });
  base = k.url!;
  port = Number(new URL(base).port);
});
afterAll(() => k?.close());

/** Status of a request, or 'dropped' when the connection was cut without a response. */
async function attempt(path: string, headers: Record<string, string> = {}): Promise<number | 'dropped'> {
  try {
    const res = await fetch(base + path, { headers });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 'dropped';
  }
}

/**
 * Sends one raw GET on a fresh socket (asking the server to close after any response, so a
 * wrongly answered request ends the wait too); resolves once the socket closed, with what came back.
 */
function rawGet(path: string, headers = ''): Promise<{ received: number; error: NodeJS.ErrnoException | undefined }> {
  const socket = connect(port, '127.0.0.1');
  let received = 0;
  let error: NodeJS.ErrnoException | undefined;
  socket.on('data', (chunk: Buffer) => (received += chunk.length));
  socket.on('error', (err) => (error = err));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${headers}\r\n`);
  return new Promise((resolve) => socket.on('close', () => resolve({ received, error })));
}

describe('over real sockets', () => {
  it('N concurrent requests against a limit of K admit exactly K', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => attempt('/capped')));
    expect(results.filter((s) => s === 200)).toHaveLength(10);
    expect(results.filter((s) => s === 429)).toHaveLength(30);
  });

  it('a disallowed client receives not one byte and sees its connection reset or closed', async () => {
    const { received, error } = await rawGet('/closed');
    expect(received).toBe(0);
    if (error) expect(error.code).toBe('ECONNRESET');
  });

  it('on a secured channel a disallowed client is dropped before authentication: no 401, not one byte, nothing counted', async () => {
    logs.length = 0;
    const withoutCredentials = await rawGet('/secured');
    expect(withoutCredentials.received).toBe(0);
    if (withoutCredentials.error) expect(withoutCredentials.error.code).toBe('ECONNRESET');
    const wrongCredentials = await rawGet('/secured', `Authorization: Basic ${Buffer.from('partner:nope').toString('base64')}\r\n`);
    expect(wrongCredentials.received).toBe(0);
    const validCredentials = await rawGet('/secured', `Authorization: ${PARTNER}\r\n`);
    expect(validCredentials.received).toBe(0);
    if (validCredentials.error) expect(validCredentials.error.code).toBe('ECONNRESET');

    // A client the firewall lets through meets authentication as usual...
    expect(await attempt('/secured', { 'x-forwarded-for': '198.51.100.1' })).toBe(401);
    const admitted = await fetch(`${base}/secured`, { headers: { authorization: PARTNER, 'x-forwarded-for': '198.51.100.1' } });
    expect(admitted.status).toBe(200);
    // ...and the partner's budget (3 a day) is whole: the dropped request with valid credentials took nothing.
    expect(admitted.headers.get('x-ratelimit-remaining')).toBe('2');

    const drops = logs.filter((line) => line.msg === DROP_LINE);
    expect(drops).toHaveLength(3);
    for (const line of drops) {
      expect(line).toMatchObject({ level: 30, channel: 'secured', rule: 1, range: 'all-day' });
      expect(String(line.client)).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      expect(line.cid).toEqual(expect.any(String));
    }
    // The dropped requests have no request line of their own: the drop line is all there is.
    expect(logs.filter((line) => line.msg === 'request' && line.channel === 'secured')).toHaveLength(2);
    // No secret reaches the log.
    expect(JSON.stringify(logs)).not.toContain(PARTNER.slice(6));
  });

  it('honours forwarded headers from every peer when trusted_proxies is absent', async () => {
    expect(await attempt('/guarded')).toBe(200);
    expect(await attempt('/guarded', { 'x-forwarded-for': '203.0.113.5, 198.51.100.1' })).toBe('dropped');
    expect(await attempt('/guarded', { 'x-forwarded-for': '198.51.100.1, 203.0.113.5' })).toBe(200);
    expect(await attempt('/guarded', { 'x-svc-forwarded-for': '203.0.113.9' })).toBe('dropped');
    // X-Svc-Forwarded-For wins over X-Forwarded-For.
    expect(await attempt('/guarded', { 'x-svc-forwarded-for': '198.51.100.1', 'x-forwarded-for': '203.0.113.5' })).toBe(200);
    expect(await attempt('/guarded', { 'x-forwarded-for': '::ffff:203.0.113.5' })).toBe('dropped');
  });

  it('ignores forwarded headers from peers outside trusted_proxies, honours them from inside', async () => {
    expect(await k.writeConfig(`server: { trusted_proxies: [10.0.0.0/8] }\n${channels}`)).toBe(true);
    expect(await attempt('/guarded', { 'x-forwarded-for': '203.0.113.5' })).toBe(200);
    expect(await attempt('/guarded', { 'x-svc-forwarded-for': '203.0.113.5' })).toBe(200);

    expect(await k.writeConfig(`server: { trusted_proxies: [127.0.0.1, '::1'] }\n${channels}`)).toBe(true);
    expect(await attempt('/guarded', { 'x-forwarded-for': '203.0.113.5' })).toBe('dropped');
    expect(await attempt('/guarded')).toBe(200);
  });

  it('`svc limits clear` resets the running server through its control socket', async () => {
    expect(await attempt('/capped')).toBe(429);
    const out: string[] = [];
    const err: string[] = [];
    const env: CliEnv = {
      config: k.kernel.configStore.current(),
      configPath: k.configPath,
      openApiFragments: () => [],
      contributions: () => [],
      serviceMetas: async () => new Map(),
      openStore: () => Promise.reject(new Error('not needed')),
      control: (op, args) => sendControl(join(k.kernel.dataDir, 'control.sock'), op, args),
      readStdin: async () => '',
      out: (line) => void out.push(line),
      err: (line) => void err.push(line),
    };
    expect(await clearCommand.run(['--channel', 'capped'], env)).toBe(0);
    expect(out).toEqual(["cleared 1 counter(s) of channel 'capped' (all rules)"]);
    expect(await attempt('/capped')).toBe(200);

    expect(await clearCommand.run(['--channel', 'nope'], env)).toBe(2);
    expect(err.pop()).toMatch(/^no channel named 'nope'/);
    expect(await clearCommand.run(['--channel', 'capped', '--rule', '2'], env)).toBe(1);
    expect(err.pop()).toMatch(/there is no rule 2/);
    const offline = { ...env, control: (op: string, args: unknown) => sendControl(join(k.dir, 'no-such.sock'), op, args) };
    expect(await clearCommand.run(['--channel', 'capped'], offline)).toBe(1);
    expect(err.pop()).toMatch(/^no running server/);
  });
});
