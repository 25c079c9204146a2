import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { refusedPort } from '../../../helpers/refused-port.ts';

/**
 * Outgoing calls after quiet periods, and with a wall clock that does not move with time.
 *
 * The upstream here closes a keep-alive connection once it has been idle for its own idle
 * timeout, as many servers do without saying so in a Keep-Alive header. It closes it lazily,
 * when the next request arrives, without answering: what a client sees when the server's close
 * and its request cross on the wire. Only a client that never reuses a socket idle that long
 * avoids the race; a POST lost in it cannot be sent again (it may have done its work).
 */
class IdleClosingUpstream {
  /** Requests answered, and requests that met a connection the server had given up. */
  answered = 0;
  closedUnanswered = 0;
  connections = 0;
  private server: Server | undefined;
  port = 0;

  constructor(private readonly idleTimeoutMs: number) {}

  async start(): Promise<this> {
    this.server = createServer((socket) => this.serve(socket));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private serve(socket: Socket): void {
    this.connections++;
    let idleSince = performance.now();
    let pending = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      if (pending.length === 0 && performance.now() - idleSince >= this.idleTimeoutMs) {
        this.closedUnanswered++;
        socket.destroy();
        return;
      }
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = pending.subarray(0, end).toString('latin1');
        const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        pending = pending.subarray(end + 4 + length);
        this.answered++;
        const body = JSON.stringify({ n: this.answered });
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
        idleSince = performance.now();
      }
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => this.server?.close(() => r()) ?? r());
  }
}

const CALLER = `import { service, outgoing, OutgoingError } from 'svc/sdk';
export default service({
  async POST(ctx) {
    const { conn, method, payload } = ctx.payload;
    try {
      const res = await outgoing(conn)[method](ctx.cid, payload === undefined ? {} : { payload });
      return { status: res.status, data: res.data };
    } catch (e) {
      if (!(e instanceof OutgoingError)) throw e;
      return { failed: e.kind, attempts: e.attempts, message: e.message };
    }
  },
});
`;

// Like uvicorn's or Apache's 5 s; svc keeps an idle socket 4 s unless told otherwise.
const fiveSeconds = new IdleClosingUpstream(5_000);
const oneSecond = new IdleClosingUpstream(1_000);
let k: TestKernel;
// Stands still, as a wall clock set back during a call would seem to: durations must not read it.
const clock = new ManualClock();

beforeAll(async () => {
  await fiveSeconds.start();
  await oneSecond.start();
  const dead = await refusedPort();
  k = await startKernel({
    clock,
    services: { 'caller.ts': CALLER },
    config: `
channel_rest:
  - { name: caller, url_path: /call, service: caller, security: none }
outgoing_rest:
  - { name: five, address: "http://127.0.0.1:${fiveSeconds.port}", retry: { max_attempts: 1 } }
  - { name: one, address: "http://127.0.0.1:${oneSecond.port}", keep_alive_ms: 500, retry: { max_attempts: 1 } }
  - { name: dead, address: "http://127.0.0.1:${dead}", retry: { max_attempts: 20, base_backoff_ms: 100, max_backoff_ms: 100, budget_ms: 400 } }
`,
  });
});
afterAll(async () => {
  await k?.close();
  await fiveSeconds.close();
  await oneSecond.close();
});
beforeEach(() => {
  for (const u of [fiveSeconds, oneSecond]) u.answered = u.closedUnanswered = u.connections = 0;
});

async function call(conn: string, method: string, payload?: unknown) {
  const res = await k.app.inject({ method: 'POST', url: '/call', payload: { conn, method, payload } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Record<string, unknown>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('outgoing calls after a quiet period', () => {
  it('a POST after the upstream’s idle timeout (5 s, not announced) goes out on a new connection, not on the one the upstream dropped', async () => {
    expect(await call('five', 'post', { first: true })).toEqual({ status: 200, data: { n: 1 } });
    await pause(5_300);
    expect(await call('five', 'post', { second: true })).toEqual({ status: 200, data: { n: 2 } });
    expect(fiveSeconds.closedUnanswered).toBe(0);
    expect(fiveSeconds.connections).toBe(2);
    // Calls closer together than keep_alive_ms still share the connection.
    for (let i = 0; i < 3; i++) expect(await call('five', 'get')).toMatchObject({ status: 200 });
    expect(fiveSeconds.connections).toBe(2);
  });

  it('keep_alive_ms below a shorter server timeout (1 s) avoids its race too', async () => {
    expect(await call('one', 'post', {})).toMatchObject({ status: 200 });
    await pause(1_200);
    expect(await call('one', 'post', {})).toMatchObject({ status: 200 });
    expect(oneSecond.closedUnanswered).toBe(0);
  });
});

describe('the retry budget', () => {
  it('is time that really passed, even while the wall clock stands still (or was set back)', async () => {
    const started = performance.now();
    const result = await call('dead', 'get');
    expect(result).toMatchObject({ failed: 'budget' });
    expect(result.attempts as number).toBeLessThan(20);
    expect(performance.now() - started).toBeLessThan(1_500);
  });
});
