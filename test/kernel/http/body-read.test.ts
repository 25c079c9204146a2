import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Exchange } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Exchange.readBody settles for every request, however its body ends: taken from the stream's
 * buffer, read as it arrives, cut off by the client, or broken by a malformed body in the same
 * read as its headers (a step may then ask for the body after Node destroyed the request).
 */
const outcomes: string[] = [];

const recorder = definePlugin({
  name: 'body-recorder',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}),
  hooks: {
    // Before the JSON format's parse step, which reads the body too (the same promise).
    limit: () => async (ex: Exchange) => {
      const tag = String(ex.headers['x-tag'] ?? '');
      try {
        const body = await ex.readBody();
        outcomes.push(`${tag}:read ${body.length}`);
      } catch (err) {
        outcomes.push(`${tag}:failed ${(err as NodeJS.ErrnoException).code ?? ''}`);
        throw err;
      }
    },
  },
});

let k: TestKernel;
let port: number;
beforeAll(async () => {
  k = await startKernel({
    config: `channel_rest:\n  - { name: echo, url_path: /echo, service: echo, security: none }\n`,
    services: { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ got: ctx.rawBody.length }) });` },
    extraPlugins: [recorder],
    listen: true,
  });
  port = Number(new URL(k.url!).port);
}, 60_000);
afterAll(() => k?.close());

function sendRaw(data: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' }, () => socket.write(data));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    setTimeout(() => socket.destroy(), 1_000);
  });
}

describe('reading a request body', () => {
  it('settles when a malformed chunked body arrives in the same read as its headers', async () => {
    const answer = await sendRaw('POST /echo HTTP/1.1\r\nHost: t\r\nX-Tag: malformed\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nnot a chunk\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    await vi.waitFor(() => expect(outcomes.filter((o) => o.startsWith('malformed:'))).toEqual(['malformed:failed ECONNRESET']), { timeout: 2_000 });
  });

  it('settles when the client leaves before the body is complete', async () => {
    await sendRaw('POST /echo HTTP/1.1\r\nHost: t\r\nX-Tag: cut\r\nContent-Length: 100\r\n\r\nonly part');
    await vi.waitFor(() => expect(outcomes.filter((o) => o.startsWith('cut:'))).toEqual(['cut:failed ECONNRESET']), { timeout: 3_000 });
  });

  it('reads a whole body that came with its headers', async () => {
    const answer = await sendRaw('POST /echo HTTP/1.1\r\nHost: t\r\nX-Tag: whole\r\nConnection: close\r\nContent-Length: 5\r\n\r\n[1,2]');
    expect(answer).toContain('{"got":5}');
    expect(outcomes).toContain('whole:read 5');
  });
});
