import { z } from 'zod';
import { appliesWhen, definePlugin, MessageFormatError, type ConfigIssue, type HookFn, type MessageDecoder } from '../../../sdk/plugin/index.ts';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import type { Exchange, ResponseDraft } from '../../../sdk/plugin/index.ts';
import { SvcError } from '../../../sdk/plugin/index.ts';
import { buildXml, createXmlReader, decodeXmlBytes, XML_READ_DEFAULTS, XmlError } from './codec.ts';

export const XML_CONTENT_TYPE = 'application/xml; charset=utf-8';

const optionsSchema = z
  .object({
    max_depth: z.number().int().min(1).max(1000).default(XML_READ_DEFAULTS.maxDepth).describe('Deepest element nesting a request document may have; deeper is answered 400.'),
    max_entity_references: z
      .number()
      .int()
      .min(0)
      .default(XML_READ_DEFAULTS.maxEntityReferences)
      .describe('Most entity and character references (&amp;, &#65;) one request document may hold; more is answered 400.'),
  })
  .strict();

type XmlOptions = z.infer<typeof optionsSchema>;

// `lines.line` (path below the root element) or `..line` (that name at any depth).
const arrayPath = z.string().regex(/^(?:\.\.)?[^.\s]+(?:\.[^.\s]+)*$/, 'a dotted element path like lines.line, or ..line for any depth');

export const xmlChannelSchema = z
  .object({
    always_array: z
      .array(arrayPath)
      .default([])
      .describe('Elements that are always lists in the payload, even when they occur once: paths below the root (lines.line) or ..name for any depth.'),
  })
  .strict();

declare module '../../../sdk/plugin/extensions.ts' {
  interface ChannelFields {
    xml?: z.output<typeof xmlChannelSchema>;
  }
}

function hasContentType(r: ResponseDraft): boolean {
  if (r.contentType) return true;
  for (const name in r.headers) if (name.toLowerCase() === 'content-type') return true;
  return false;
}

function checkSettingsPlacement(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  config.channel_rest.forEach((ch, i) => {
    if (ch.xml !== undefined && ch.data_format !== 'xml') issues.push({ path: ['channel_rest', i, 'xml'], message: "xml settings apply only to channels with data_format: xml" });
  });
  return issues;
}

function serializeXml(ex: Exchange): void {
  const r = ex.response;
  const body = r.body;
  if (body === undefined) return;
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) {
    try {
      r.body = buildXml(body);
    } catch (err) {
      if (err instanceof XmlError) throw new SvcError('INTERNAL', `Service output cannot be written as XML: ${err.message}`);
      throw err;
    }
  }
  if (!hasContentType(r)) r.contentType = XML_CONTENT_TYPE;
}

/** A message's bytes as XML: the channel's `xml:` settings of the source, the plugin's limits. */
function xmlMessages(limits: () => XmlOptions): MessageDecoder {
  return {
    decode(body, settings) {
      const { always_array } = xmlChannelSchema.parse(settings ?? {});
      const { max_depth, max_entity_references } = limits();
      try {
        return { payload: createXmlReader({ alwaysArray: always_array, maxDepth: max_depth, maxEntityReferences: max_entity_references })(decodeXmlBytes(body)), textFields: true };
      } catch (err) {
        if (err instanceof XmlError) throw new MessageFormatError(`Malformed XML: ${err.message}`);
        throw err;
      }
    },
  };
}

// Contributions are static data: the decoder reads the limits the plugin was set up with.
let xmlLimits: XmlOptions = optionsSchema.parse({});

export default definePlugin<XmlOptions, XmlOptions>({
  name: 'xml',
  kind: 'format',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: optionsSchema,
  contributes: {
    dataFormats: ['xml'],
    textFormats: ['xml'],
    messageFormats: { xml: xmlMessages(() => xmlLimits) },
    channelFields: { xml: appliesWhen(xmlChannelSchema.optional(), 'data_format', 'xml').describe('XML settings of a channel with data_format: xml.') },
    validateConfig: checkSettingsPlacement,
    channelOpenApi: {
      bodies: {
        xml: {
          mediaType: 'application/xml',
          fields: 'object',
          description:
            "An XML document: the root element's children (and its attributes, as `@name`) are the input fields, their text converted to the declared types; the root's own name is the field `#root`.",
          replyMediaType: 'application/xml',
        },
      },
    },
  },
  setup: (_kernel, options) => (xmlLimits = options),
  hooks: {
    parse({ channel, state }) {
      if (channel.data_format !== 'xml') return undefined;
      const settings = xmlChannelSchema.parse(channel.xml ?? {});
      const read = createXmlReader({ alwaysArray: settings.always_array, maxDepth: state.max_depth, maxEntityReferences: state.max_entity_references });
      const parseXmlBody: HookFn = async (ex) => {
        const body = await ex.readBody();
        if (body.length === 0) return;
        try {
          ex.payload = read(decodeXmlBytes(body));
        } catch (err) {
          if (err instanceof XmlError) throw new SvcError('MALFORMED_BODY', `Malformed XML: ${err.message}`);
          throw err;
        }
      };
      return parseXmlBody;
    },
    serialize({ channel }) {
      return channel.data_format === 'xml' ? serializeXml : undefined;
    },
  },
});
