import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pubsubPlugin from '../../../../plugins/pubsub/engine/plugin.ts';
import type { DemoImport } from '../../../../plugins/pubsub/engine/demo.ts';
import type { CliEnv } from '../../../../kernel/plugin.ts';
import { basic, json, startPubSub, type PubSubKernel } from './helpers.ts';

let k: PubSubKernel;
let dir: string;
beforeAll(async () => {
  k = await startPubSub({ config: 'pubsub_topic: []' });
  dir = k.dir;
});
afterAll(async () => {
  await k?.close();
});

function cliEnv(control: CliEnv['control']): CliEnv & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return {
    config: k.kernel.configStore.current(),
    configPath: k.configPath,
    openApiFragments: () => [],
    contributions: () => [],
    serviceMetas: async () => new Map(),
    openStore: async () => k.kernel.store,
    control,
    readStdin: async () => '',
    out: (line) => lines.push(line),
    err: (line) => errors.push(line),
    lines,
    errors,
  };
}

const demoCommand = pubsubPlugin.cli!.find((c) => c.words.join(' ') === 'demo')!;

describe('svc demo', () => {
  let demo: DemoImport;

  it('imports demo credentials and topics into the running server and prints them', async () => {
    const env = cliEnv(async (op, args) => ({ ok: true, value: await k.kernel.runControl(op, args) }));
    expect(await demoCommand.run([], env)).toBe(0);
    demo = (await k.kernel.runControl('pubsub.demo', {})) as DemoImport;
    expect(demo.topics).toEqual(['/demo/orders', '/demo/invoices', '/demo/alerts']);
    expect(demo.users.map((u) => u.username)).toEqual(['demo.user.1', 'demo.user.2']);
    const text = env.lines.join('\n');
    for (const u of demo.users) expect(text).toContain(`${u.username} / password ${u.password}`);
    expect(text).toContain('does not survive a restart');
  });

  it('the demo users can use variant B at once: they are subscribed already', async () => {
    const [u1, u2] = demo.users;
    const auth1 = basic(u1!.username, u1!.password);
    const auth2 = basic(u2!.username, u2!.password);
    expect((await k.call('POST', '/pubsub/topic/demo/alerts', auth1, { data: 'fire', priority: 9 })).statusCode).toBe(200);
    expect((await k.call('POST', '/pubsub/topic/demo/orders', auth2, { data: 'order' })).statusCode).toBe(200);
    expect((json(await k.call('POST', '/pubsub/messages/get', auth1)) as { messages: Array<{ data: string }> }).messages.map((m) => m.data)).toEqual(['fire', 'order']);
    expect((json(await k.call('POST', '/pubsub/messages/get', auth2)) as { data: string }).data).toBe('fire');
  });

  it('a second import returns the same credentials', async () => {
    expect(await k.kernel.runControl('pubsub.demo', {})).toEqual(demo);
  });

  it('fails clearly when no server runs', async () => {
    const env = cliEnv(async () => undefined);
    expect(await demoCommand.run([], env)).toBe(1);
    expect(env.errors.join('\n')).toMatch(/no server is running/);
  });

  it('does not survive a restart', async () => {
    await k.close();
    k = await startPubSub({ config: 'pubsub_topic: []', dir });
    const u = demo.users[0]!;
    expect(k.engine.hasTopic('/demo/orders')).toBe(false);
    expect((await k.call('POST', '/pubsub/messages/get', basic(u.username, u.password))).statusCode).toBe(401);
  });
});
