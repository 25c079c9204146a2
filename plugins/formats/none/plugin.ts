import { z } from 'zod';
import { definePlugin, type HookFn, type MessageDecoder } from '../../../sdk/plugin/index.ts';

/** The body is read (so limits apply and the service gets the bytes) but not interpreted. */
const readRawBody: HookFn = async function readRawBody(ex) {
  await ex.readBody();
};

/** A message's bytes are not interpreted: the service reads them as ctx.rawBody. */
const rawMessages: MessageDecoder = { decode: () => ({ raw: true }) };

export default definePlugin({
  name: 'none',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: ['none'],
    messageFormats: { none: rawMessages },
    channelOpenApi: {
      bodies: { none: { mediaType: '*/*', fields: 'none', schema: {}, description: 'Any bytes: the body is not interpreted (the service reads it raw); input fields come from the URL.' } },
    },
  },
  hooks: {
    parse: ({ channel }) => (channel.data_format === 'none' ? readRawBody : undefined),
  },
});
