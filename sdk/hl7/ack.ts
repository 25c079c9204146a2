import { parseHl7, serializeHl7 } from './codec.ts';
import { Hl7Error } from './types.ts';
import type { Field, Hl7Message } from './types.ts';

/**
 * Builds the acknowledgement of a received HL7 v2 message (original mode: AA, AE, AR).
 * Pure and isolate-safe: services call it in their sandbox.
 */

export type AckCode = 'AA' | 'AE' | 'AR';

export interface AckOptions {
  /** MSA-3 text, and the ERR text for AE/AR. */
  text?: string;
  /** HL7 table 0357 error code in ERR-3 for AE/AR; default 207 (application internal error). */
  errorCode?: string;
  /** MSH-10 of the ACK; default: the time stamp digits plus three random digits. */
  controlId?: string;
  /** MSH-7 of the ACK; default: now. Written in UTC as YYYYMMDDHHMMSS+0000. */
  now?: Date;
}

const ACK_CODES: readonly string[] = ['AA', 'AE', 'AR'];

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

export function hl7Timestamp(d: Date): string {
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}+0000`;
}

function text(field: Field | undefined, component = 0): string {
  return field?.[0]?.[component]?.[0] ?? '';
}

/** Returns the ACK as ER7 text with the received message's delimiters, segments ended by CR. */
export function buildAck(received: string | Hl7Message, code: AckCode = 'AA', options: AckOptions = {}): string {
  if (!ACK_CODES.includes(code)) throw new Hl7Error(`acknowledgement code must be AA, AE or AR, got ${JSON.stringify(code)}`);
  const msg = typeof received === 'string' ? parseHl7(received) : received;
  const msh = msg.segments?.[0];
  if (msh === undefined || msh.name !== 'MSH') throw new Hl7Error('the received message has no MSH segment');
  const f = (n: number): Field => msh.fields[n - 1] ?? [[['']]];
  const now = options.now ?? new Date();
  const stamp = hl7Timestamp(now);
  const controlId = options.controlId ?? stamp.slice(0, 14) + pad(Math.floor(Math.random() * 1000), 3);
  const trigger = text(f(9), 1);
  const messageType: Field = trigger === '' ? [[['ACK']]] : [[['ACK'], [trigger], ['ACK']]];

  const header: Field[] = [
    [[[msg.delimiters.field]]],
    [[['']]], // MSH-2: written from the delimiters
    f(5), // sending application ← the receiver of the original
    f(6),
    f(3), // receiving application ← its sender
    f(4),
    [[[stamp]]],
    [[['']]],
    messageType,
    [[[controlId]]],
    f(11),
    f(12),
  ];
  const msa: Field[] = [[[[code]]], [[[text(f(10))]]]];
  if (options.text !== undefined && options.text !== '') msa.push([[[options.text]]]);
  const segments = [
    { name: 'MSH', fields: header },
    { name: 'MSA', fields: msa },
  ];
  if (code !== 'AA') {
    const err: Field = [[[options.errorCode ?? '207'], [options.text ?? ''], ['HL70357']]];
    const empty: Field = [[['']]];
    segments.push({ name: 'ERR', fields: [empty, empty, err, [[['E']]]] });
  }
  return serializeHl7({ segments, delimiters: msg.delimiters, separator: '\r', trailingSeparator: true });
}
