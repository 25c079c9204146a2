import { z } from 'zod';
import { appliesWhen, definePlugin, MessageFormatError, type ConfigIssue, type HookFn, type MessageDecoder } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { FORM_DEFAULTS, FormError, parseForm } from './codec.ts';

/**
 * data_format: form — application/x-www-form-urlencoded request bodies become fields
 * (spec A.12). Replies are left to the kernel: objects go out as JSON, like a json channel.
 */

export const formChannelSchema = z
  .object({
    max_fields: z.number().int().min(1).max(100_000).default(FORM_DEFAULTS.maxFields).describe('Most fields one form body may hold; more is answered 413.'),
  })
  .strict();

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    form?: z.output<typeof formChannelSchema>;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.form !== undefined && ch.data_format !== 'form') issues.push({ path: ['channel_rest', i, 'form'], message: 'form settings apply only to channels with data_format: form' });
  });
  return issues;
}

/** A message's bytes as an urlencoded form (`form:` settings of the source). */
const formMessages: MessageDecoder = {
  decode(body, settings) {
    const { max_fields } = formChannelSchema.parse(settings ?? {});
    let text: string;
    try {
      text = utf8.decode(body);
    } catch {
      throw new MessageFormatError('Malformed form body: not valid UTF-8');
    }
    try {
      return { payload: parseForm(text, max_fields), textFields: true };
    } catch (err) {
      if (err instanceof FormError) throw new MessageFormatError(`Malformed form body: ${err.message}`);
      throw err;
    }
  },
};

export default definePlugin({
  name: 'form',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: ['form'],
    textFormats: ['form'],
    messageFormats: { form: formMessages },
    channelFields: { form: appliesWhen(formChannelSchema.optional(), 'data_format', 'form').describe('Form settings of a channel with data_format: form.') },
    validateConfig: checkSettingsPlacement,
    channelOpenApi: {
      bodies: {
        form: {
          mediaType: 'application/x-www-form-urlencoded',
          fields: 'object',
          description: 'Form fields are the input fields; their values are text, converted to the declared types (integer, number, boolean).',
          replyMediaType: 'application/json',
        },
      },
    },
  },
  hooks: {
    parse({ channel }) {
      if (channel.data_format !== 'form') return undefined;
      const { max_fields } = formChannelSchema.parse(channel.form ?? {});
      const parseFormBody: HookFn = async (ex) => {
        const body = await ex.readBody();
        if (body.length === 0) return;
        let text: string;
        try {
          text = utf8.decode(body);
        } catch {
          throw new SvcError('MALFORMED_BODY', 'Malformed form body: not valid UTF-8');
        }
        try {
          ex.payload = parseForm(text, max_fields);
        } catch (err) {
          if (err instanceof FormError) throw new SvcError(err.tooLarge ? 'PAYLOAD_TOO_LARGE' : 'MALFORMED_BODY', `${err.tooLarge ? 'Form body too large' : 'Malformed form body'}: ${err.message}`);
          throw err;
        }
      };
      return parseFormBody;
    },
  },
});
