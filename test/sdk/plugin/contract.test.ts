import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, type Channel, type ControlOp, type Exchange, type HostCall, type Plugin } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * The plugin contract has no `any`: `definePlugin` infers a plugin's options from its schema and
 * its state from `setup`, and that typed plugin, its typed control ops and host calls are what the
 * kernel holds (`Plugin`, `ControlOp`, `HostCall`, all of unknown types) without a cast. The type
 * assertions are checked by `tsc` (npm run typecheck, in CI); the kernel run shows the same
 * plugin's state reaching its hooks and its op's parsed arguments reaching its handler.
 */
const greetArgs = z.object({ name: z.string().min(1) }).strict();

const greeter = definePlugin({
  name: 'greeter',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({ greeting: z.string().default('hello') }).strict().default({ greeting: 'hello' }),
  setup(kernel, options) {
    expectTypeOf(options).toEqualTypeOf<{ greeting: string }>();
    const greet: ControlOp<z.infer<typeof greetArgs>> = { op: 'greeter.greet', args: greetArgs, handler: async ({ name }) => `${options.greeting}, ${name}` };
    kernel.addControl(greet);
    return { greeting: options.greeting, greeted: 0 };
  },
  hooks: {
    onRequest: ({ state }) => {
      expectTypeOf(state).toEqualTypeOf<{ greeting: string; greeted: number }>();
      return (ex: Exchange) => {
        state.greeted += 1;
        ex.reply(200, { said: state.greeting, times: state.greeted });
      };
    },
  },
});

describe('the plugin contract without any', () => {
  it('infers options and state, and a typed plugin, op and host call are the kernel’s kinds without a cast', () => {
    expectTypeOf(greeter).toEqualTypeOf<Plugin<{ greeting: string }, { greeting: string; greeted: number }>>();
    expectTypeOf(greeter).toExtend<Plugin>();
    expectTypeOf<ControlOp<{ name: string }>>().toExtend<ControlOp>();
    expectTypeOf<HostCall<{ topic: string }>>().toExtend<HostCall>();
    // unknown, not any: what the kernel holds must be narrowed before use.
    expectTypeOf<Parameters<ControlOp['handler']>[0]>().toBeUnknown();
    expectTypeOf<Parameters<NonNullable<Plugin['setup']>>[1]>().toBeUnknown();
    const held: Plugin[] = [greeter];
    expect(held[0]!.name).toBe('greeter');
  });

  it('types a channel’s plugin fields through ChannelFields, not an index signature', () => {
    expectTypeOf<Channel>().toHaveProperty('rate_limiting');
    expectTypeOf<Channel['use_queue']>().toEqualTypeOf<boolean | undefined>();
    // @ts-expect-error: a key no plugin declares is not a channel field.
    expectTypeOf<Channel['no_such_field']>().toBeUnknown();
  });

  describe('through the kernel', () => {
    let k: TestKernel;
    beforeAll(async () => {
      k = await startKernel({
        config: `
channel_rest:
  - { name: greet, url_path: /greet, service: hello, security: none }
`,
        extraPlugins: [greeter],
      });
    });
    afterAll(async () => {
      await k?.close();
    });

    it('hands the options its schema parsed to setup, and the state setup returned to its hooks', async () => {
      const first = await k.app.inject({ method: 'GET', url: '/greet' });
      const second = await k.app.inject({ method: 'GET', url: '/greet' });
      expect([first.json(), second.json()]).toEqual([
        { said: 'hello', times: 1 },
        { said: 'hello', times: 2 },
      ]);
    });

    it('runs a typed control op with the arguments its schema parsed, and refuses others', async () => {
      await expect(k.kernel.runControl('greeter.greet', { name: 'ops' })).resolves.toBe('hello, ops');
      await expect(k.kernel.runControl('greeter.greet', { name: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    });
  });
});
