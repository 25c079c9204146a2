import { z } from 'zod';
import { appliesWhen, definePlugin, type ConfigIssue, type HookFn } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { MultipartError, parseMultipart, type MultipartLimits } from './codec.ts';

/**
 * data_format: multipart — multipart/form-data uploads (spec A.10): files to ex.files, the other
 * fields to the payload. The channel's body_limit still applies first, to the whole body.
 * Replies are left to the kernel: objects go out as JSON, like a json channel.
 */

const MiB = 1024 * 1024;

export const multipartChannelSchema = z
  .object({
    max_file_bytes: z.number().int().min(0).default(10 * MiB).describe('Largest single file, in bytes; a larger one is answered 413.'),
    max_files: z.number().int().min(0).default(10).describe('Most file parts in one request; more is answered 413.'),
    max_fields: z.number().int().min(0).default(100).describe('Most non-file fields in one request; more is answered 413.'),
    max_field_bytes: z.number().int().min(0).default(MiB).describe('Largest value of one non-file field, in bytes; larger is answered 413.'),
    max_total_bytes: z.number().int().min(0).default(20 * MiB).describe('Most bytes of all files together; more is answered 413.'),
  })
  .strict();

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    multipart?: z.output<typeof multipartChannelSchema>;
  }
}

function limitsOf(settings: z.infer<typeof multipartChannelSchema>): MultipartLimits {
  return {
    maxFileBytes: settings.max_file_bytes,
    maxFiles: settings.max_files,
    maxFields: settings.max_fields,
    maxFieldBytes: settings.max_field_bytes,
    maxTotalBytes: settings.max_total_bytes,
  };
}

function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.multipart !== undefined && ch.data_format !== 'multipart') {
      issues.push({ path: ['channel_rest', i, 'multipart'], message: 'multipart settings apply only to channels with data_format: multipart' });
    }
  });
  return issues;
}

const STATUS_OF = { malformed: 'MALFORMED_BODY', too_large: 'PAYLOAD_TOO_LARGE', media_type: 'UNSUPPORTED_MEDIA_TYPE' } as const;
const PREFIX_OF = { malformed: 'Malformed multipart body', too_large: 'Upload too large', media_type: 'Unsupported media type' } as const;

function headerText(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

export default definePlugin({
  name: 'multipart',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: ['multipart'],
    textFormats: ['multipart'],
    channelFields: { multipart: appliesWhen(multipartChannelSchema.optional(), 'data_format', 'multipart').describe('Upload limits of a channel with data_format: multipart.') },
    validateConfig: checkSettingsPlacement,
    channelOpenApi: {
      bodies: {
        multipart: {
          mediaType: 'multipart/form-data',
          fields: 'object',
          description: "Non-file fields are the input fields (text, converted to the declared types); file parts reach the service as its files, within the channel's multipart limits.",
          replyMediaType: 'application/json',
        },
      },
      responses: (channel) => (channel.data_format === 'multipart' ? { 415: 'the body is not multipart/form-data (UNSUPPORTED_MEDIA_TYPE)' } : undefined),
    },
  },
  hooks: {
    parse({ channel }) {
      if (channel.data_format !== 'multipart') return undefined;
      const limits = limitsOf(multipartChannelSchema.parse(channel.multipart ?? {}));
      const parseMultipartBody: HookFn = async (ex) => {
        const body = await ex.readBody();
        if (body.length === 0) {
          ex.files = [];
          return;
        }
        try {
          const { fields, files } = await parseMultipart(body, headerText(ex.headers['content-type']), limits);
          ex.payload = fields;
          ex.files = files;
        } catch (err) {
          if (err instanceof MultipartError) throw new SvcError(STATUS_OF[err.kind], `${PREFIX_OF[err.kind]}: ${err.message}`);
          throw err;
        }
      };
      return parseMultipartBody;
    },
  },
});
