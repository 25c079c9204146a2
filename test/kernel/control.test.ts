import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../helpers/kernel.ts';

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: 'channel_rest: []', listen: true });
});
afterAll(() => k?.close());

function send(path: string, body: string | Buffer): Promise<{ status: number; text: string } | 'closed'> {
  return new Promise((resolve) => {
    const req = request({ socketPath: join(k.dir, 'data', 'control.sock'), path, method: 'POST' }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', () => resolve('closed'));
    });
    req.on('error', () => resolve('closed'));
    req.end(body);
  });
}

it('a malformed operation name is a refusal, not a dead server', async () => {
  const r = await send('/%E0%A4%A', '{}');
  expect(r).toMatchObject({ status: 400 });
  expect(JSON.parse((r as { text: string }).text).error).toMatch(/cannot be read/);
});

it('an oversized control request is cut off and the server keeps serving', async () => {
  expect(await send('/nope', Buffer.alloc(2 << 20, 'x'))).toBe('closed');
  const r = await k.app.inject({ method: 'GET', url: '/nothing' });
  expect(r.statusCode).toBe(404);
  expect(await send('/nope', '{}')).toMatchObject({ status: 400 });
});
