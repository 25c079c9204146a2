import { z } from 'zod';
import { definePlugin, type CliCommand, type KernelApi, type ServiceMeta } from '../../../sdk/plugin/index.ts';
import type { ChannelsOpenApi } from '../../capabilities.ts';
import { channelsDocument, channelsFragment, type ChannelsSource } from './build.ts';

/** Where the channel listener serves the document, beside the pub/sub one (/svc/pubsub/openapi.json). */
export const OPENAPI_PATH = '/svc/channels/openapi.json';

const optionsSchema = z
  .object({
    channel_listener: z
      .boolean()
      .default(true)
      .describe(
        `Serve the document at GET ${OPENAPI_PATH} on the channel listener, without credentials (it names every channel, its parameters and its ` +
          'security type, never a secret). false: only the admin API and `svc openapi --channels` give it.',
      ),
  })
  .strict()
  .default({ channel_listener: true });

type Options = z.infer<typeof optionsSchema>;

/**
 * Generated per request from the config in force and the deployed services, so a hot deploy or a
 * config change shows at once; the last document is kept while neither changed.
 */
function liveDocument(kernel: KernelApi): ChannelsOpenApi {
  let key: unknown[] = [];
  let doc: Record<string, unknown> | undefined;
  const source = (): ChannelsSource => ({ config: kernel.config(), contributions: kernel.contributions(), serviceMeta: (name) => kernel.serviceMeta(name) });
  return {
    document() {
      const config = kernel.config();
      const now = [config, ...config.channel_rest.map((c) => kernel.serviceMeta(c.service))];
      if (!doc || now.length !== key.length || now.some((v, i) => v !== key[i])) {
        doc = channelsDocument(source());
        key = now;
      }
      return doc;
    },
    fragment: () => channelsFragment(source()),
  };
}

const openapiChannelsCommand: CliCommand = {
  words: ['openapi', '--channels'],
  usage: 'svc openapi --channels',
  describe:
    'Prints the OpenAPI 3.1 document of the channels: the running server\'s (its config with admin edits, its deployed services), or with no server ' +
    `running, one built from the config file and the services directory compiled in a sandbox. Also served at GET ${OPENAPI_PATH}.`,
  async run(args, env) {
    if (args.length) {
      env.err(`unexpected argument: ${args[0]}\nusage: svc openapi --channels`);
      return 2;
    }
    const reply = await env.control('openapi.channels', {});
    if (reply && !reply.ok) {
      env.err(`the running server refused: ${reply.error ?? 'unknown error'}`);
      return 1;
    }
    let doc = reply?.value;
    if (!reply) {
      const metas: Map<string, ServiceMeta> = await env.serviceMetas();
      doc = channelsDocument({ config: env.config, contributions: env.contributions(), serviceMeta: (name) => metas.get(name) });
    }
    env.out(JSON.stringify(doc, null, 2));
    return 0;
  },
};

/** The OpenAPI document of the channels. See README.md. */
export default definePlugin<Options, ChannelsOpenApi>({
  name: 'channels-openapi',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.0.0',
  provides: ['openapi.channels'],
  configSchema: optionsSchema,
  setup(kernel, options) {
    const live = liveDocument(kernel);
    kernel.provide('openapi.channels', live);
    kernel.addControl({ op: 'openapi.channels', readOnly: true, args: z.object({}).strict(), handler: async () => live.document() });
    if (options.channel_listener) kernel.addRoute({ name: 'channels openapi', method: 'GET', url: OPENAPI_PATH, handler: (ex) => ex.reply(200, live.document()) });
    return live;
  },
  hooks: {},
  cli: [openapiChannelsCommand],
});
