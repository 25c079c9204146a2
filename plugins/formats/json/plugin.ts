import { z } from 'zod';
import { appliesWhen, definePlugin, MessageFormatError, type ConfigIssue, type HookFn, type MessageDecoder } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { JSON_MAX_DEPTH, JSON_MAX_DEPTH_CEILING, JsonBodyError, readJsonBody } from '../../../sdk/plugin/index.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

export const jsonChannelSchema = z
  .object({
    max_depth: z
      .number()
      .int()
      .min(1)
      .max(JSON_MAX_DEPTH_CEILING)
      .default(JSON_MAX_DEPTH)
      .describe('Deepest nesting of arrays and objects a request body may have; deeper is answered 400.'),
  })
  .strict();

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    json?: z.output<typeof jsonChannelSchema>;
  }
}

function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.json !== undefined && ch.data_format !== 'json') issues.push({ path: ['channel_rest', i, 'json'], message: 'json settings apply only to channels with data_format: json' });
  });
  return issues;
}

/** Reads the body as JSON: nesting past maxDepth, `__proto__` and `constructor.prototype` keys are refused. */
function jsonBodyParser(maxDepth: number): HookFn {
  return async function parseJsonBody(ex) {
    const body = await ex.readBody();
    if (body.length === 0) return;
    try {
      ex.payload = readJsonBody(body, maxDepth);
    } catch (err) {
      if (err instanceof JsonBodyError) throw new SvcError('MALFORMED_BODY', `Invalid JSON: ${err.message}`);
      throw err;
    }
  };
}

/** Settings objects already read: a source passes the same one with every message. */
const depthOf = new WeakMap<object, number>();
function maxDepthOf(settings: unknown): number {
  if (settings === undefined || settings === null) return JSON_MAX_DEPTH;
  if (typeof settings !== 'object') return jsonChannelSchema.parse(settings).max_depth;
  let depth = depthOf.get(settings);
  if (depth === undefined) depthOf.set(settings, (depth = jsonChannelSchema.parse(settings).max_depth));
  return depth;
}

/** A message's bytes as JSON, with a channel's limits (`json:` settings of the source). */
const jsonMessages: MessageDecoder = {
  decode(body, settings) {
    const max_depth = maxDepthOf(settings);
    try {
      return { payload: readJsonBody(body, max_depth) };
    } catch (err) {
      if (err instanceof JsonBodyError) throw new MessageFormatError(`Invalid JSON: ${err.message}`);
      throw err;
    }
  },
};

const serializeJson: HookFn = function serializeJson(ex) {
  const r = ex.response;
  if (r.body === undefined || Buffer.isBuffer(r.body)) return;
  if (typeof r.body === 'string' && r.contentType) return;
  r.body = JSON.stringify(r.body);
  r.contentType ??= JSON_TYPE;
};

export default definePlugin({
  name: 'json',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: ['json'],
    // readJsonBody's value is JSON.parse of the body's UTF-8 text, refused rather than altered when unsafe.
    jsonBodyFormats: ['json'],
    // serializeJson: a typed string goes as it is, other values as JSON.stringify with JSON_TYPE.
    jsonReplyFormats: ['json'],
    messageFormats: { json: jsonMessages },
    defaultDataFormat: 'json',
    channelFields: { json: appliesWhen(jsonChannelSchema.optional(), 'data_format', 'json').describe('JSON settings of a channel with data_format: json.') },
    validateConfig: checkSettingsPlacement,
    channelOpenApi: {
      bodies: {
        json: {
          mediaType: 'application/json',
          fields: 'object',
          description: "A JSON object whose fields are the service's input fields, merged with the URL's; another JSON value reaches the service as its payload only.",
          replyMediaType: 'application/json',
        },
      },
    },
  },
  hooks: {
    parse({ channel }) {
      if (channel.data_format !== 'json') return undefined;
      return jsonBodyParser(jsonChannelSchema.parse(channel.json ?? {}).max_depth);
    },
    serialize: ({ channel }) => (channel.data_format === 'json' ? serializeJson : undefined),
  },
});
