/**
 * Data formats for messages that do not come over HTTP (a broker message's body, a file, a mail
 * attachment): a format plugin contributes a decoder per format it handles
 * (`Contributions.messageFormats`), and a connector decodes a message with
 * `KernelApi.decodeMessage(format, body, settings)`. SDK 1.8.
 */
export interface DecodedMessage {
  /** The service's `ctx.payload`; an object's fields are its input fields too, as a channel's body. */
  payload?: unknown;
  /** The payload's field values are text (XML, form, HL7): converted to a typed model's declared types. */
  textFields?: boolean;
  /** The service reads the bytes themselves (`ctx.rawBody`): the `none` format. */
  raw?: boolean;
}

export interface MessageDecoder {
  /**
   * Reads one message's bytes. `settings` are the format's own settings where the source's config
   * gives them (an AMQP channel's `xml:`), the same keys as a REST channel's, unchecked: the decoder
   * validates them. Throws MessageFormatError for a message that is not of the format.
   */
  decode(body: Buffer, settings: unknown): DecodedMessage;
}

/** A message that is not valid for its format: the reason, safe to store with a dead letter. */
export class MessageFormatError extends Error {
  override readonly name = 'MessageFormatError';
}
