import { definePlugin, SvcError, type Channel, type Exchange, type HookFn, type ResponseDraft } from 'svc/sdk/plugin';
import { CsvFormatError, readCsv, writeCsv } from './codec.ts';
import { checkSettingsPlacement, CSV, CSV_CONTENT_TYPE, csvChannelSchema, csvOptionsSchema, type CsvSettings } from './schema.ts';

function hasContentType(r: ResponseDraft): boolean {
  if (r.contentType) return true;
  for (const name in r.headers) if (name.toLowerCase() === 'content-type') return true;
  return false;
}

/** parse: the body's rows become the payload (ctx.payload); an empty body leaves it unset. */
function csvReader(settings: CsvSettings): HookFn {
  return async function parseCsvBody(ex: Exchange) {
    const body = await ex.readBody();
    if (body.length === 0) return;
    try {
      ex.payload = readCsv(body, settings);
    } catch (err) {
      if (err instanceof CsvFormatError) throw new SvcError('MALFORMED_BODY', `Malformed CSV: ${err.message}`);
      throw err;
    }
  };
}

/** serialize: rows the service returned become CSV text; text and bytes pass through as they are. */
function csvWriter(settings: CsvSettings): HookFn {
  return function serializeCsv(ex: Exchange) {
    const r = ex.response;
    if (r.body === undefined) return;
    if (typeof r.body !== 'string' && !Buffer.isBuffer(r.body)) {
      try {
        r.body = writeCsv(r.body, settings.delimiter);
      } catch (err) {
        if (err instanceof CsvFormatError) throw new SvcError('INTERNAL', `Service output cannot be written as CSV: ${err.message}`);
        throw err;
      }
    }
    if (!hasContentType(r)) r.contentType = CSV_CONTENT_TYPE;
  };
}

const settingsOf = (channel: Channel): CsvSettings => csvChannelSchema.parse(channel.csv ?? {});

/** CSV request and response bodies on channels with `data_format: csv`. See README.md. */
export default definePlugin({
  name: 'csv',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.0.0',
  configSchema: csvOptionsSchema,
  contributes: {
    dataFormats: [CSV],
    channelFields: { csv: csvChannelSchema.optional().describe('CSV settings of a channel with data_format: csv.') },
    validateConfig: checkSettingsPlacement,
    // The rows are the payload, not input fields: those come from the URL.
    channelOpenApi: { bodies: { [CSV]: { mediaType: 'text/csv', fields: 'none', schema: { type: 'string' }, description: 'CSV text (RFC 4180); the rows reach the service as its payload.', replyMediaType: 'text/csv' } } },
  },
  hooks: {
    parse: ({ channel }) => (channel.data_format === CSV ? csvReader(settingsOf(channel)) : undefined),
    serialize: ({ channel }) => (channel.data_format === CSV ? csvWriter(settingsOf(channel)) : undefined),
  },
});
