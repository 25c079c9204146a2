import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../kernel/clock.ts';
import { sendControl } from '../../../kernel/control.ts';
import type { CliEnv } from '../../../kernel/plugin.ts';
import { clearCommand } from '../../../plugins/rate-limit/clear.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };

const channels = `
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
`;

let k: TestKernel;
let base: string;
let port: number;

beforeAll(async () => {
  k = await startKernel({ config: channels, services: ECHO, clock: new ManualClock(Date.UTC(2026, 0, 1, 12)), listen: true });
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

describe('over real sockets', () => {
  it('N concurrent requests against a limit of K admit exactly K', async () => {
    const results = await Promise.all(Array.from({ length: 40 }, () => attempt('/capped')));
    expect(results.filter((s) => s === 200)).toHaveLength(10);
    expect(results.filter((s) => s === 429)).toHaveLength(30);
  });

  it('a disallowed client receives not one byte and sees its connection reset or closed', async () => {
    const socket = connect(port, '127.0.0.1');
    let received = 0;
    let error: NodeJS.ErrnoException | undefined;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('error', (err) => (error = err));
    socket.write('GET /closed HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await new Promise<void>((resolve) => socket.on('close', () => resolve()));
    expect(received).toBe(0);
    if (error) expect(error.code).toBe('ECONNRESET');
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
