import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { listenerDrain } from '../../../sdk/plugin/listener-drain.ts';

/**
 * sdk/plugin/listener-drain.ts over real sockets: once the listener closes, connections that
 * carry no request are closed as soon as they carry none, and a request in flight is answered.
 * Without it, Node's close waits for a connection that sent nothing until the headers timeout.
 */
let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  server?.closeAllConnections();
  server?.close();
});

/** A server whose /slow answers after `slowMs`; headers may take a minute, keep-alive lasts a minute. */
async function listen(drained: boolean, slowMs = 300): Promise<{ port: number; close: () => Promise<number> }> {
  server = createServer({ headersTimeout: 60_000, requestTimeout: 120_000, keepAliveTimeout: 60_000 }, (req, res) => {
    setTimeout(() => res.end('ok'), req.url === '/slow' ? slowMs : 0);
  });
  const drain = drained ? listenerDrain(server) : undefined;
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const s = server;
  return {
    port: (s.address() as AddressInfo).port,
    close: () => {
      const t0 = performance.now();
      drain?.begin();
      return new Promise<number>((r) => s.close(() => r(performance.now() - t0)));
    },
  };
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    sockets.push(s);
  });
}

function get(port: number, path: string, agent: import('node:http').Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ port, host: '127.0.0.1', path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

describe('listenerDrain', () => {
  it('closes a connection that has sent nothing, which Node would wait for', async () => {
    const { port, close } = await listen(true);
    const spare = await open(port);
    const closed = new Promise<void>((r) => spare.once('close', () => r()));
    expect(await close()).toBeLessThan(1_000);
    await closed;
  });

  it('Node alone waits for it (the case the drain is for)', async () => {
    const { port, close } = await listen(false);
    await open(port);
    const outcome = await Promise.race([close().then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 1_000))]);
    expect(outcome).toBe('still open');
  });

  it('answers a request in flight, then closes its connection, however long its keep-alive', async () => {
    const { port, close } = await listen(true);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    try {
      expect(await get(port, '/fast', agent)).toBe('ok');
      const slow = get(port, '/slow', agent);
      await new Promise((r) => setTimeout(r, 50));
      const ms = close();
      expect(await slow).toBe('ok');
      expect(await ms).toBeLessThan(1_500);
    } finally {
      agent.destroy();
    }
  });
});
