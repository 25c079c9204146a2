import { z } from 'zod';
import { appliesWhen, definePlugin, MessageFormatError, SvcError, type Channel, type Exchange, type HookFn, type MessageDecoder, type ResponseDraft } from '../../../sdk/plugin/index.ts';
import { createCsvReader, CsvReadError, encodingOf, type CsvRecords } from './read.ts';
import { checkSettingsPlacement, CSV, csvChannelSchema, type CsvSettings } from './schema.ts';
import { createCsvWriter, CsvWriteError } from './write.ts';

const CONTENT_TYPES = { utf8: 'text/csv; charset=utf-8', latin1: 'text/csv; charset=iso-8859-1' } as const;
// Characters ISO-8859-1 cannot carry: Buffer.from(text, 'latin1') would silently keep the low byte.
const NOT_LATIN1 = /[^\x00-\xFF]/;

function hasContentType(r: ResponseDraft): boolean {
  if (r.contentType) return true;
  for (const name in r.headers) if (name.toLowerCase() === 'content-type') return true;
  return false;
}

const contentTypeOf = (ex: Exchange): string | undefined => {
  const value = ex.headers['content-type'];
  return Array.isArray(value) ? value[0] : value;
};

/** parse: the body's records become ctx.payload (a list, so not input fields); an empty body leaves it unset. */
function csvBodyReader(settings: CsvSettings): HookFn {
  const read = createCsvReader(settings);
  return async function parseCsvBody(ex) {
    const body = await ex.readBody();
    if (body.length === 0) return;
    try {
      ex.payload = read(body, encodingOf(contentTypeOf(ex), settings.encoding));
    } catch (err) {
      if (err instanceof CsvReadError) throw new SvcError('MALFORMED_BODY', `Malformed CSV: ${err.message}`);
      throw err;
    }
  };
}

/** serialize: rows the service returned become CSV in the channel's encoding; text and bytes pass as they are. */
function csvReplyWriter(settings: CsvSettings): HookFn {
  const write = createCsvWriter(settings);
  return function serializeCsv(ex) {
    const r = ex.response;
    if (r.body === undefined) return;
    if (typeof r.body !== 'string' && !Buffer.isBuffer(r.body)) {
      let text: string;
      try {
        text = write(r.body);
      } catch (err) {
        if (err instanceof CsvWriteError) throw new SvcError('INTERNAL', `Service output cannot be written as CSV: ${err.message}`);
        throw err;
      }
      // Text ISO-8859-1 cannot carry (a euro sign; a request read as UTF-8 for its BOM) goes out as
      // UTF-8, saying so, rather than failing the call or losing characters.
      const encoding = settings.encoding === 'latin1' && !NOT_LATIN1.test(text) ? 'latin1' : 'utf8';
      r.body = encoding === 'latin1' ? Buffer.from(text, 'latin1') : text;
      if (!hasContentType(r)) r.contentType = CONTENT_TYPES[encoding];
      return;
    }
    if (!hasContentType(r)) r.contentType = CONTENT_TYPES[settings.encoding];
  };
}

/** Readers already built, by settings object: a source passes the same one with every message. */
const readers = new WeakMap<object, (body: Buffer) => CsvRecords>();
const defaultReader = createCsvReader(csvChannelSchema.parse({}));

function readerOf(settings: unknown): (body: Buffer) => CsvRecords {
  if (settings === undefined || settings === null) return defaultReader;
  if (typeof settings !== 'object') return createCsvReader(csvChannelSchema.parse(settings));
  let reader = readers.get(settings);
  if (reader === undefined) readers.set(settings, (reader = createCsvReader(csvChannelSchema.parse(settings))));
  return reader;
}

/** A message's bytes as CSV, with the source's `csv:` settings; a body that is not CSV is a MessageFormatError (dead-lettered). */
const csvMessages: MessageDecoder = {
  decode(body, settings) {
    const read = readerOf(settings);
    try {
      return { payload: read(body), textFields: true };
    } catch (err) {
      if (err instanceof CsvReadError) throw new MessageFormatError(`Malformed CSV: ${err.message}`);
      throw err;
    }
  },
};

const settingsOf = (channel: Channel): CsvSettings => csvChannelSchema.parse(channel.csv ?? {});

/** CSV request bodies, replies and messages (`data_format: csv`). See README.md. */
export default definePlugin({
  name: 'csv',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: [CSV],
    textFormats: [CSV],
    messageFormats: { [CSV]: csvMessages },
    channelFields: { csv: appliesWhen(csvChannelSchema.optional(), 'data_format', 'csv').describe('CSV settings of a channel with data_format: csv.') },
    validateConfig: checkSettingsPlacement,
    channelOpenApi: {
      bodies: {
        [CSV]: {
          mediaType: 'text/csv',
          // The records are the payload, a list: a service's input fields come from the URL.
          fields: 'none',
          schema: { type: 'string', description: 'CSV text (RFC 4180), UTF-8 unless the channel reads ISO-8859-1; by default the first row names the columns.' },
          description: "The rows reach the service as its payload (`ctx.payload`, a list of records); the service's input fields come from the URL.",
          replyMediaType: 'text/csv',
        },
      },
    },
  },
  hooks: {
    parse: ({ channel }) => (channel.data_format === CSV ? csvBodyReader(settingsOf(channel)) : undefined),
    serialize: ({ channel }) => (channel.data_format === CSV ? csvReplyWriter(settingsOf(channel)) : undefined),
  },
});
