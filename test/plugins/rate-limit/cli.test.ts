import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, runCli, startCli, type CliServer } from '../../helpers/cli.ts';

/** The server started by the real `svc start`, its clients over real sockets, `svc limits clear` by the real binary. */

const ECHO = { 'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n` };
const PARTNER = `Basic ${Buffer.from('partner:partner-pass-1').toString('base64')}`;

const CONFIG = `
server:
  data_dir: ./data
  services_dir: ./services
security:
  - { name: partner, type: basic_auth, username: partner, password: partner-pass-1 }
channel_rest:
  - { name: capped, url_path: /capped, service: echo, security: none,
      rate_limiting: [{ time_range: [{ is_all_day: true, limit: 2, limit_unit: day }] }] }
  - name: secured
    url_path: /secured
    service: echo
    security: partner
    rate_limiting:
      - cidr_list: [127.0.0.0/8, '::1']
        time_range: [{ is_all_day: true, disallowed: true }]
`;

let dir: string;
let server: CliServer;

beforeAll(async () => {
  dir = makeProject(CONFIG, ECHO);
  server = await startCli(dir);
}, 60_000);
afterAll(async () => {
  if (server?.proc.exitCode === null) await server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function get(path: string) {
  const res = await request(`${server.url}${path}`);
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

/** Resolves with the first line of the server's output containing `text`, once it has been printed. */
function outputLine(cli: CliServer, text: string): Promise<string> {
  return new Promise((resolve) => {
    const look = () => {
      const found = cli.output().split('\n').find((l) => l.includes(text));
      if (found === undefined) return;
      cli.proc.stdout!.off('data', look);
      resolve(found);
    };
    cli.proc.stdout!.on('data', look);
    look();
  });
}

/** The next UTC midnight after an HTTP-date: when a daily cap (server.timezone UTC) starts afresh. */
function nextUtcMidnight(httpDate: string): number {
  const d = new Date(Date.parse(httpDate));
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
}

describe('rate limiting in a server started by `svc start`', () => {
  it('answers past the cap with 429, the error body with the CID, and a parseable HTTP-date Retry-After', async () => {
    expect((await get('/capped')).status).toBe(200);
    const last = await get('/capped');
    expect(last.status).toBe(200);
    expect(last.headers['x-ratelimit-remaining']).toBe('0');

    const denied = await get('/capped');
    expect(denied.status).toBe(429);
    const cid = denied.headers['x-svc-cid'];
    expect(cid).toMatch(/^[0-9a-f]+$/);
    expect(JSON.parse(denied.text)).toEqual({ result: 'Error', cid, details: 'Too many requests' });
    const retryAfter = String(denied.headers['retry-after']);
    expect(retryAfter).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    // A daily cap frees up at the next midnight (UTC): that is when the same request would pass.
    expect(Date.parse(retryAfter)).toBe(nextUtcMidnight(String(denied.headers.date)));
    expect(denied.headers['x-ratelimit-limit']).toBe('2');
    expect(denied.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('`svc limits clear` run by the real binary resets the running server, and the next request is admitted', async () => {
    expect((await get('/capped')).status).toBe(429);
    const cleared = runCli(['limits', 'clear', '--channel', 'capped', '--config', 'config/svc.yaml'], dir);
    expect(cleared).toMatchObject({ status: 0, stderr: '' });
    expect(cleared.stdout).toContain("cleared 1 counter(s) of channel 'capped' (all rules)");
    expect((await get('/capped')).status).toBe(200);

    const unknown = runCli(['limits', 'clear', '--channel', 'nope'], dir);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/no channel named 'nope'/);
  });

  it('drops a disallowed client on a secured channel before authentication, and logs one line for it', async () => {
    const socket = connect(Number(new URL(server.url).port), new URL(server.url).hostname);
    let received = 0;
    socket.on('data', (chunk: Buffer) => (received += chunk.length));
    socket.on('error', () => undefined);
    socket.write(`GET /secured HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: ${PARTNER}\r\n\r\n`);
    await new Promise<void>((resolve) => socket.on('close', () => resolve()));
    expect(received).toBe(0);

    // The line is written before the reset but reaches us through the server's stdout pipe.
    const line = await outputLine(server, 'connection dropped: client disallowed by rate_limiting');
    expect(JSON.parse(line)).toMatchObject({ channel: 'secured', rule: 1, range: 'all-day', client: expect.stringMatching(/127\.0\.0\.1$/) });
    expect(server.output()).not.toContain('partner-pass-1');
    expect(server.output()).not.toContain(PARTNER.slice(6));
  });
});
