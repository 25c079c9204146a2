import { z } from 'zod';
import sjson from 'secure-json-parse';
import { definePlugin, type HookFn } from '../../../kernel/plugin.ts';
import { SvcError } from '../../../kernel/errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

/** Reads the body as JSON; `__proto__` and `constructor.prototype` keys are refused (prototype poisoning). */
export function parseJson(text: string): unknown {
  try {
    // The careful parser only when the text could hold a poisoning key; plain JSON.parse otherwise.
    if (!text.includes('__proto__') && !text.includes('constructor')) return JSON.parse(text);
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    throw new SvcError('MALFORMED_BODY', `Invalid JSON: ${(err as Error).message}`);
  }
}

const parseJsonBody: HookFn = async function parseJsonBody(ex) {
  const body = await ex.readBody();
  if (body.length === 0) return;
  ex.payload = parseJson(body.toString('utf8'));
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
  configSchema: z.object({}).strict(),
  contributes: { dataFormats: ['json'] },
  hooks: {
    parse: ({ channel }) => (channel.data_format === 'json' ? parseJsonBody : undefined),
    serialize: ({ channel }) => (channel.data_format === 'json' ? serializeJson : undefined),
  },
});
