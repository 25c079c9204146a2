/**
 * HL7 v2 helpers for services on hl7 channels: build an ACK, read fields by path, parse and
 * serialize ER7. The hl7 format plugin reads and writes channel messages with the same code.
 */
export { buildAck, hl7Timestamp, type AckCode, type AckOptions } from './hl7/ack.ts';
export { parseHl7, serializeHl7, type Hl7MessageInput } from './hl7/codec.ts';
export { getField, getAllFields } from './hl7/fields.ts';
export type { Hl7Message, Hl7Payload, Segment, Field as Hl7Field, Component, Repetition, Delimiters } from './hl7/types.ts';
