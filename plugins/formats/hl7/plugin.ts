import { z } from 'zod';
import { definePlugin, MessageFormatError, type HookFn, type MessageDecoder } from '../../../sdk/plugin/index.ts';
import type { Exchange, ResponseDraft } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { parseHl7, serializeHl7, type Hl7MessageInput } from '../../../sdk/hl7/codec.ts';
import { Hl7Error, type Hl7Payload } from '../../../sdk/hl7/types.ts';
import { decodeHl7Bytes, encodeHl7Text } from './bytes.ts';
import { flattenFields } from './flatten.ts';

export const HL7_CONTENT_TYPE = 'x-application/hl7-v2+er7; charset=utf-8';
export const HL7_LATIN1_CONTENT_TYPE = 'x-application/hl7-v2+er7; charset=iso-8859-1';

function hasContentType(r: ResponseDraft): boolean {
  if (r.contentType) return true;
  for (const name in r.headers) if (name.toLowerCase() === 'content-type') return true;
  return false;
}

/** The service gets the flat fields (`PID.5.1`) and the exact structure; the text as received is ctx.rawBody. */
export function hl7Payload(text: string): Hl7Payload {
  const message = parseHl7(text);
  return Object.assign(flattenFields(message), message) as Hl7Payload;
}

const parseHl7Body: HookFn = async (ex) => {
  const body = await ex.readBody();
  if (body.length === 0) return;
  try {
    ex.payload = hl7Payload(decodeHl7Bytes(body));
  } catch (err) {
    if (err instanceof Hl7Error) throw new SvcError('MALFORMED_BODY', `Malformed HL7 message: ${err.message}`);
    throw err;
  }
};

/** A message's bytes as one HL7 v2 message; the text as received is ctx.rawBody, as on a channel. */
const hl7Messages: MessageDecoder = {
  decode(body) {
    try {
      return { payload: hl7Payload(decodeHl7Bytes(body)), textFields: true, raw: true };
    } catch (err) {
      if (err instanceof Hl7Error) throw new MessageFormatError(`Malformed HL7 message: ${err.message}`);
      throw err;
    }
  },
};

function isMessage(v: unknown): v is Hl7MessageInput {
  return v !== null && typeof v === 'object' && Array.isArray((v as { segments?: unknown }).segments);
}

function serializeHl7Body(ex: Exchange): void {
  const r = ex.response;
  const body = r.body;
  if (body === undefined) return;
  const chosenType = hasContentType(r);
  if (Buffer.isBuffer(body)) {
    if (!chosenType) r.contentType = HL7_CONTENT_TYPE;
    return;
  }
  let text: string;
  if (typeof body === 'string') text = body;
  else {
    if (!isMessage(body)) throw new SvcError('INTERNAL', 'Service output cannot be written as HL7: return ER7 text or a message with a segments array');
    try {
      text = serializeHl7(body);
    } catch (err) {
      if (err instanceof Hl7Error) throw new SvcError('INTERNAL', `Service output cannot be written as HL7: ${err.message}`);
      throw err;
    }
  }
  // A service that chose the content type chose the charset with it: its text goes out as UTF-8, as before.
  if (chosenType) {
    r.body = text;
    return;
  }
  let out: ReturnType<typeof encodeHl7Text>;
  try {
    out = encodeHl7Text(text, ex.rawBody);
  } catch (err) {
    if (err instanceof Hl7Error) throw new SvcError('INTERNAL', `Service output cannot be written as HL7: ${err.message}`);
    throw err;
  }
  r.body = out.body;
  r.contentType = out.charset === 'utf-8' ? HL7_CONTENT_TYPE : HL7_LATIN1_CONTENT_TYPE;
}

export default definePlugin({
  name: 'hl7',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataFormats: ['hl7'],
    textFormats: ['hl7'],
    messageFormats: { hl7: hl7Messages },
    channelOpenApi: {
      bodies: {
        hl7: {
          mediaType: 'x-application/hl7-v2+er7',
          fields: 'message',
          schema: { type: 'string', description: 'One HL7 v2 message, ER7 (pipe-delimited) encoding.' },
          description: 'The input fields are read out of the message by HL7 position (`PID.5`, `PID.5.1`), as text converted to the declared types.',
          replyMediaType: 'x-application/hl7-v2+er7',
        },
      },
    },
  },
  hooks: {
    parse: ({ channel }) => (channel.data_format === 'hl7' ? parseHl7Body : undefined),
    serialize: ({ channel }) => (channel.data_format === 'hl7' ? serializeHl7Body : undefined),
  },
});
