import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * One access line per answered request, written once the response finished (Fastify's log
 * controller, kernel/http/app.ts): CID, channel when one matched, method, URL, status, ms.
 */
const logs: Array<Record<string, unknown>> = [];
let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    logs,
    config: `
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
`,
    services: { 'hello.ts': `import { service } from 'svc/sdk';\nexport default service({ GET: () => ({ hello: 'world' }) });\n` },
  });
}, 60_000);
afterAll(() => k?.close());

const linesOf = (cid: string) => logs.filter((l) => l.msg === 'request' && l.cid === cid);

describe('access log', () => {
  it('a channel request: one line with its CID, channel, method, URL, status and time', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/hello?x=1' });
    expect(res.statusCode).toBe(200);
    const cid = res.headers['x-svc-cid'] as string;
    const lines = linesOf(cid);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, cid, channel: 'hello', method: 'GET', url: '/hello?x=1', status: 200 });
    expect(typeof lines[0]!.ms).toBe('number');
  });

  it('refusals are logged too: 405 on the channel, 404 with no channel', async () => {
    const wrongMethod = await k.app.inject({ method: 'DELETE', url: '/hello' });
    expect(wrongMethod.statusCode).toBe(405);
    expect(linesOf(wrongMethod.headers['x-svc-cid'] as string)).toEqual([expect.objectContaining({ channel: 'hello', method: 'DELETE', status: 405 })]);
    const unknown = await k.app.inject({ method: 'GET', url: '/nowhere' });
    expect(unknown.statusCode).toBe(404);
    const [line] = linesOf(unknown.headers['x-svc-cid'] as string);
    expect(line).toMatchObject({ url: '/nowhere', status: 404 });
    expect(line).not.toHaveProperty('channel');
  });
});
