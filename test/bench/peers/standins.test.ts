import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';
import { removeStandInPrograms, standInProgram } from '../../../bench/peers/standins/program.ts';

/**
 * The floor suite's stand-in sandbox processes (bench/peers/standins/) speak the kernel's wire: a
 * kernel started with SVC_SANDBOX_PROGRAM runs them in place of its sandbox and answers its
 * channel through them. Kept here so a change to the wire cannot leave the floor measuring nothing.
 */
const config = `
server: { sandbox: { workers: 1 } }
channel_rest:
  - { name: hello, url_path: /hello, service: hello, security: none }
`;
// The stand-ins run none of this: they answer every call as the trivial service would.
const services = { 'hello.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => 'from the real sandbox' });\n` };

let k: TestKernel | undefined;
afterEach(async () => {
  delete process.env.SVC_SANDBOX_PROGRAM;
  await k?.close();
  k = undefined;
});
afterAll(removeStandInPrograms);

describe('stand-in sandbox processes', () => {
  for (const mode of ['echo', 'isolate'] as const) {
    it(`the ${mode} stand-in answers the channel in place of the sandbox`, async () => {
      process.env.SVC_SANDBOX_PROGRAM = standInProgram(mode);
      k = await startKernel({ config, services });
      for (let i = 0; i < 3; i++) {
        const res = await k.app.inject({ method: 'GET', url: '/hello' });
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ hello: 'world' });
        expect(res.headers['x-svc-cid']).toBeTruthy();
      }
      const many = await Promise.all(Array.from({ length: 20 }, () => k!.app.inject({ method: 'GET', url: '/hello' })));
      expect(many.map((r) => r.body)).toEqual(Array(20).fill('{"hello":"world"}'));
    });
  }

  it('without SVC_SANDBOX_PROGRAM the real sandbox answers', async () => {
    k = await startKernel({ config, services });
    const res = await k.app.inject({ method: 'GET', url: '/hello' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toBe('from the real sandbox');
  });
});
