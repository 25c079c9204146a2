/**
 * Plain-data shapes of an HL7 v2 (ER7) message. Everything here survives JSON, so a
 * message crosses into a service sandbox unchanged. Every file in sdk/hl7/ is isolate-safe
 * (no Node APIs, no Buffer, no package imports): services run it in their sandbox, and the
 * hl7 format plugin uses the same code on the host.
 */

/** The message's own delimiters, read from MSH-1 (field) and MSH-2 (the rest). */
export interface Delimiters {
  field: string;
  component: string;
  repetition: string;
  escape: string;
  subcomponent: string;
  /** HL7 v2.7 fifth encoding character; absent in older messages. */
  truncation?: string;
}

/** One component: its subcomponents, decoded (a plain component is `['value']`). */
export type Component = string[];
/** One repetition of a field: its components. */
export type Repetition = Component[];
/** One field: its repetitions (an ordinary field has exactly one). */
export type Field = Repetition[];

/** `fields[0]` is field 1 (for MSH: `[[['|']]]`, then `[[['^~\\&']]]` for MSH-2). */
export interface Segment {
  name: string;
  fields: Field[];
}

export type SegmentSeparator = '\r' | '\n' | '\r\n';

/** The exact structure: `serializeHl7(parseHl7(text))` gives `text` back byte for byte. */
export interface Hl7Message {
  delimiters: Delimiters;
  separator: SegmentSeparator;
  /** Whether the last segment was followed by a separator too. */
  trailingSeparator: boolean;
  segments: Segment[];
  /**
   * Leaves whose escape sequences were not written the canonical way (`\X41\`, `\E\H\E\`,
   * lower-case hex...): leaf position `segment.field.repetition.component.subcomponent`
   * (zero-based indexes into these arrays) → text as received. serializeHl7 writes that text
   * again while the leaf still holds the value it decodes to. Absent when every escape was canonical.
   */
  verbatim?: Record<string, string>;
}

/**
 * What an hl7 channel hands to a service as payload: the exact structure, and flat fields by
 * HL7 position (`'PID.5.1': 'Doe'`) of the first occurrence of each segment. The message text
 * as received is the request's raw body.
 */
export type Hl7Payload = Hl7Message & Record<string, unknown>;

export const STANDARD_DELIMITERS: Readonly<Delimiters> = Object.freeze({
  field: '|',
  component: '^',
  repetition: '~',
  escape: '\\',
  subcomponent: '&',
});

/** A message that cannot be read or written; `message` is the reason a client is told. */
export class Hl7Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Hl7Error';
  }
}
