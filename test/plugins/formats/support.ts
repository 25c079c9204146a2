import type { Channel, SvcConfig } from '../../../kernel/config/schema.ts';
import type { Exchange, ResponseDraft, UploadedFile } from '../../../sdk/plugin/exchange.ts';
import type { HookFn, KernelApi, Plugin } from '../../../kernel/plugin.ts';

/**
 * Runs a format plugin's parse and serialize steps on a plain Exchange, without a server:
 * the plugin contract is plain data, so its steps can be exercised directly. End-to-end
 * behaviour over HTTP is covered by e2e.test.ts.
 */

export function channelOf(dataFormat: string, extra: Partial<Channel> = {}): Channel {
  return {
    name: 'c',
    url_path: '/c',
    service: 's',
    data_format: dataFormat,
    security: 'none',
    url_params_pri: 'qs_over_path',
    params_pri: 'url_over_msg',
    ...extra,
  };
}

export interface TestExchange extends Exchange {
  response: ResponseDraft;
}

export function exchangeOf(channel: Channel, body: Buffer | string = '', headers: Record<string, string> = {}): TestExchange {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const ex: TestExchange = {
    cid: 'cid-1',
    channel,
    method: 'POST',
    path: channel.url_path,
    headers,
    hideHeader() {},
    onSent: (done) => done(true),
    visibleHeaders: () => ({ ...headers }),
    remoteAddress: '127.0.0.1',
    clientAddress: '127.0.0.1',
    pathParams: {},
    query: {},
    rawBody: undefined,
    payload: undefined,
    files: undefined as UploadedFile[] | undefined,
    input: {},
    auth: undefined,
    response: { status: 200, headers: {}, body: undefined, contentType: undefined },
    replied: false,
    async readBody() {
      ex.rawBody = bytes;
      return bytes;
    },
    reply() {
      throw new Error('a format step does not reply');
    },
    drop() {
      throw new Error('a format step does not drop');
    },
    log: undefined as never,
  };
  return ex;
}

async function stepOf(plugin: Plugin, phase: 'parse' | 'serialize', channel: Channel): Promise<HookFn | undefined> {
  const state = plugin.setup ? await plugin.setup({} as KernelApi, plugin.configSchema.parse({})) : undefined;
  return plugin.hooks[phase]?.({ channel, config: {} as SvcConfig, state, kernel: {} as KernelApi }) as HookFn | undefined;
}

export async function parseWith(plugin: Plugin, channel: Channel, body: Buffer | string, headers: Record<string, string> = {}): Promise<TestExchange> {
  const step = await stepOf(plugin, 'parse', channel);
  if (!step) throw new Error(`${plugin.name} has no parse step for data_format ${channel.data_format}`);
  const ex = exchangeOf(channel, body, headers);
  await step(ex);
  return ex;
}

export async function serializeWith(plugin: Plugin, channel: Channel, response: Partial<ResponseDraft>): Promise<ResponseDraft> {
  const step = await stepOf(plugin, 'serialize', channel);
  if (!step) throw new Error(`${plugin.name} has no serialize step for data_format ${channel.data_format}`);
  const ex = exchangeOf(channel);
  Object.assign(ex.response, response);
  await step(ex);
  return ex.response;
}

export async function hasStep(plugin: Plugin, phase: 'parse' | 'serialize', channel: Channel): Promise<boolean> {
  return (await stepOf(plugin, phase, channel)) !== undefined;
}
