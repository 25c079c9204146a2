import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePlugin, HOOK_NAMES, SvcError, type Exchange, type HookName } from '../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../helpers/kernel.ts';

/**
 * Every hook phase, tapped by a fake plugin written only against the plugin SDK: each phase runs,
 * in the documented order, on the channels it applies to; a reply stops the chain; a throw goes
 * to onError, which may shape the reply; onResponse runs after the reply and its errors are ignored.
 */
const calls: string[] = [];
const seen = (phase: HookName) => (ex: Exchange) => void calls.push(`${phase}:${ex.channel.name}`);

const tracer = definePlugin({
  name: 'tracer',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}),
  hooks: {
    onRequest: () => seen('onRequest'),
    authenticate: () => seen('authenticate'),
    limit: () => seen('limit'),
    // After the json plugin's parse (plugins run in name order): the payload is there.
    parse: () => (ex: Exchange) => void calls.push(`parse:${ex.channel.name}:${JSON.stringify(ex.payload ?? null)}`),
    validate: ({ channel }) =>
      channel.name === 'refuse'
        ? () => {
            calls.push('validate:refuse');
            throw new SvcError('BAD_REQUEST', 'refused by validate');
          }
        : seen('validate'),
    // A plugin that replies at invoke replaces the service (as a Use queue plugin does).
    invoke: ({ channel }) =>
      channel.name === 'queued'
        ? (ex: Exchange) => {
            calls.push('invoke:queued');
            ex.reply(202, { queued: true });
          }
        : seen('invoke'),
    serialize: () => (ex: Exchange) => {
      calls.push(`serialize:${ex.channel.name}`);
      ex.response.headers['x-serialized'] = 'yes';
    },
    onResponse: () => (ex: Exchange) => {
      calls.push(`onResponse:${ex.channel.name}:${ex.response.status}`);
      throw new Error('ignored: the reply went out already');
    },
    onError: ({ channel }) =>
      channel.name === 'shaped'
        ? (ex: Exchange, err: unknown) => {
            calls.push(`onError:shaped:${(err as Error).message}`);
            ex.reply(418, { shaped: true, cid: ex.cid });
          }
        : (_ex: Exchange, err: unknown) => void calls.push(`onError:${channel.name}:${(err as SvcError).code}`),
  },
});

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({
    config: `
channel_rest:
  - { name: plain, url_path: /plain, service: echo, security: none }
  - { name: refuse, url_path: /refuse, service: echo, security: none }
  - { name: queued, url_path: /queued, service: echo, security: none }
  - { name: shaped, url_path: /shaped, service: boom, security: none }
`,
    services: {
      'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle(ctx) { return { got: ctx.payload ?? null }; } });`,
      'boom.js': `import { service, Conflict } from 'svc/sdk';\nexport default service({ handle() { throw new Conflict('taken'); } });`,
    },
    extraPlugins: [tracer],
  });
});
afterAll(() => k?.close());

async function call(url: string, payload?: unknown) {
  calls.length = 0;
  const res = await k.app.inject({ method: 'POST', url, payload: payload as object });
  // onResponse runs after the reply has been written.
  await new Promise((r) => setImmediate(r));
  return res;
}

describe('hook phases through a plugin that uses only the plugin SDK', () => {
  it('the closed list is what the SDK exports', () => {
    expect(HOOK_NAMES).toEqual(['onRequest', 'authenticate', 'limit', 'parse', 'validate', 'invoke', 'serialize', 'onResponse', 'onError']);
  });

  it('runs every chain phase in order, then onResponse (whose error is ignored)', async () => {
    const res = await call('/plain', { a: 1 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ got: { a: 1 } });
    expect(res.headers['x-serialized']).toBe('yes');
    expect(calls).toEqual(['onRequest:plain', 'authenticate:plain', 'limit:plain', 'parse:plain:{"a":1}', 'validate:plain', 'invoke:plain', 'serialize:plain', 'onResponse:plain:200']);
  });

  it('a throw in validate skips the service and goes to onError; the kernel answers from the catalogue', async () => {
    const res = await call('/refuse', { a: 1 });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: 'refused by validate' });
    expect(calls).toEqual(['onRequest:refuse', 'authenticate:refuse', 'limit:refuse', 'parse:refuse:{"a":1}', 'validate:refuse', 'onError:refuse:BAD_REQUEST', 'onResponse:refuse:400']);
  });

  it('a reply at invoke replaces the service and stops the chain (no serialize)', async () => {
    const res = await call('/queued');
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ queued: true });
    expect(calls).toEqual(['onRequest:queued', 'authenticate:queued', 'limit:queued', 'parse:queued:null', 'validate:queued', 'invoke:queued', 'onResponse:queued:202']);
  });

  it('onError may shape the reply of a service error', async () => {
    const res = await call('/shaped');
    expect(res.statusCode).toBe(418);
    expect(res.json()).toEqual({ shaped: true, cid: res.headers['x-svc-cid'] });
    expect(calls.at(-2)).toBe('onError:shaped:taken');
    expect(calls.at(-1)).toBe('onResponse:shaped:418');
  });
});
