/**
 * HL7 v2 helpers for services on hl7 channels (the hl7 format plugin's own pure code, which
 * runs unchanged in the isolate): build an ACK, read fields by path, parse and serialize ER7.
 */
export { buildAck, hl7Timestamp, type AckCode, type AckOptions } from '../plugins/formats/hl7/ack.ts';
export { parseHl7, serializeHl7, type Hl7MessageInput } from '../plugins/formats/hl7/codec.ts';
export { getField, getAllFields } from '../plugins/formats/hl7/fields.ts';
export type { Hl7Message, Hl7Payload, Segment, Field as Hl7Field, Component, Repetition, Delimiters } from '../plugins/formats/hl7/types.ts';
