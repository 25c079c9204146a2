import { decodeLeaf, encodeLeaf } from './escape.ts';
import { Hl7Error, STANDARD_DELIMITERS } from './types.ts';
import type { Component, Delimiters, Field, Hl7Message, Repetition, Segment, SegmentSeparator } from './types.ts';

/**
 * ER7 (pipe-delimited HL7 v2) reader and writer. Isolate-safe: strings in, strings out.
 * Round trip: serializeHl7(parseHl7(t)) === t for every message parseHl7 accepts whose
 * segments are separated consistently, without blank lines, BOM or MLLP framing.
 */

const SEGMENT_NAME = /^[A-Z][A-Z0-9]{2}$/;
const SEGMENT_BREAK = /\r\n|\r|\n/;
const MLLP_START = '\x0b';
const MLLP_END = '\x1c';

/** Drops a byte-order mark and MLLP framing (start block, end block and its CR), which are transport, not message. */
export function stripFraming(text: string): string {
  let start = 0;
  if (text.charCodeAt(0) === 0xfeff) start = 1;
  if (text[start] === MLLP_START) start++;
  let end = text.length;
  if (text[end - 1] === '\r' && text[end - 2] === MLLP_END) end -= 2;
  else if (text[end - 1] === MLLP_END) end -= 1;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function describeChar(c: string): string {
  const code = c.charCodeAt(0);
  return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : `'${c}'`;
}

function isUsableDelimiter(c: string): boolean {
  return !/[A-Za-z0-9\s]/.test(c) && c.charCodeAt(0) >= 0x20 && c.charCodeAt(0) !== 0x7f;
}

/** Reads MSH-1 and MSH-2 from the start of a message that begins with `MSH`. */
export function readDelimiters(text: string): Delimiters {
  const field = text[3];
  if (field === undefined || field === '\r' || field === '\n') throw new Hl7Error('MSH-1 (field separator) is missing');
  if (!isUsableDelimiter(field)) throw new Hl7Error(`MSH-1 field separator ${describeChar(field)} is not a usable delimiter`);
  let end = 4;
  while (end < text.length && text[end] !== field && text[end] !== '\r' && text[end] !== '\n') end++;
  const chars = text.slice(4, end);
  if (chars.length !== 4 && chars.length !== 5) {
    throw new Hl7Error(`MSH-2 must hold 4 encoding characters (component, repetition, escape, subcomponent, as in ^~\\&) or 5 with truncation; got ${JSON.stringify(chars.length > 12 ? `${chars.slice(0, 12)}…` : chars)}`);
  }
  const seen = new Set<string>([field]);
  for (const c of chars) {
    if (!isUsableDelimiter(c)) throw new Hl7Error(`MSH-2 encoding character ${describeChar(c)} is not a usable delimiter`);
    if (seen.has(c)) throw new Hl7Error(`MSH-2 repeats the delimiter '${c}'`);
    seen.add(c);
  }
  const d: Delimiters = { field, component: chars[0]!, repetition: chars[1]!, escape: chars[2]!, subcomponent: chars[3]! };
  if (chars.length === 5) d.truncation = chars[4]!;
  return d;
}

function encodingCharacters(d: Delimiters): string {
  return d.component + d.repetition + d.escape + d.subcomponent + (d.truncation ?? '');
}

interface ParseState {
  d: Delimiters;
  verbatim: Record<string, string> | undefined;
}

/** Key of one leaf in `verbatim`: zero-based segment, field, repetition, component, subcomponent. */
export function leafKey(s: number, f: number, r: number, c: number, sc: number): string {
  return `${s}.${f}.${r}.${c}.${sc}`;
}

function parseLeaf(raw: string, st: ParseState, s: number, f: number, r: number, c: number, sc: number): string {
  if (raw.indexOf(st.d.escape) === -1) return raw;
  const value = decodeLeaf(raw, st.d);
  if (encodeLeaf(value, st.d) !== raw) {
    st.verbatim ??= {};
    st.verbatim[leafKey(s, f, r, c, sc)] = raw;
  }
  return value;
}

function parseField(raw: string, st: ParseState, s: number, f: number): Field {
  const d = st.d;
  const reps = raw.indexOf(d.repetition) === -1 ? [raw] : raw.split(d.repetition);
  const field: Field = new Array(reps.length);
  for (let r = 0; r < reps.length; r++) {
    const rep = reps[r]!;
    const comps = rep.indexOf(d.component) === -1 ? [rep] : rep.split(d.component);
    const repetition: Repetition = new Array(comps.length);
    for (let c = 0; c < comps.length; c++) {
      const comp = comps[c]!;
      if (comp.indexOf(d.subcomponent) === -1) {
        repetition[c] = [parseLeaf(comp, st, s, f, r, c, 0)];
        continue;
      }
      const subs = comp.split(d.subcomponent);
      const component: Component = new Array(subs.length);
      for (let sc = 0; sc < subs.length; sc++) component[sc] = parseLeaf(subs[sc]!, st, s, f, r, c, sc);
      repetition[c] = component;
    }
    field[r] = repetition;
  }
  return field;
}

function parseSegment(line: string, s: number, st: ParseState): Segment {
  const name = line.slice(0, 3);
  if (!SEGMENT_NAME.test(name)) throw new Hl7Error(`segment ${s + 1} has an invalid name ${JSON.stringify(name)}`);
  if (line.length > 3 && line[3] !== st.d.field) {
    throw new Hl7Error(`segment ${s + 1} (${name}): the name must be followed by the field separator '${st.d.field}'`);
  }
  const parts = line.split(st.d.field);
  const fields: Field[] = [];
  if (name === 'MSH') {
    if (s > 0) throw new Hl7Error(`segment ${s + 1} is a second MSH: batches of messages are not supported`);
    fields.push([[[st.d.field]]], [[[parts[1] ?? '']]]);
    for (let i = 2; i < parts.length; i++) fields.push(parseField(parts[i]!, st, s, i));
  } else {
    for (let i = 1; i < parts.length; i++) fields.push(parseField(parts[i]!, st, s, i - 1));
  }
  return { name, fields };
}

function detectSeparator(text: string): SegmentSeparator {
  const m = SEGMENT_BREAK.exec(text);
  return m === null ? '\r' : (m[0] as SegmentSeparator);
}

export function parseHl7(input: string): Hl7Message {
  const text = stripFraming(input);
  if (text.trim().length === 0) throw new Hl7Error('empty message');
  if (!text.startsWith('MSH')) {
    const head = text.slice(0, 3);
    if (head === 'FHS' || head === 'BHS') throw new Hl7Error('batch files (FHS/BHS) are not supported: send one message per request');
    throw new Hl7Error(`message does not start with an MSH segment (starts with ${JSON.stringify(text.slice(0, 8))})`);
  }
  const st: ParseState = { d: readDelimiters(text), verbatim: undefined };
  const lines = text.split(SEGMENT_BREAK);
  let trailingSeparator = false;
  if (lines.length > 1 && lines[lines.length - 1] === '') {
    lines.pop();
    trailingSeparator = true;
  }
  const segments: Segment[] = [];
  for (const line of lines) {
    if (line.length === 0) continue; // a blank line between segments carries nothing
    segments.push(parseSegment(line, segments.length, st));
  }
  const message: Hl7Message = { delimiters: st.d, separator: detectSeparator(text), trailingSeparator, segments };
  if (st.verbatim !== undefined) message.verbatim = st.verbatim;
  return message;
}

// ---------------------------------------------------------------------------------------------
// Writing. Input comes from service code, so every shape is checked and the reason reported.

/**
 * What serializeHl7 accepts: an Hl7Message, or a looser hand-built one. A field may be a string
 * (one value), or an array of repetitions; a repetition a string or an array of components;
 * a component a string or an array of subcomponents. Numbers and booleans are written as text,
 * null and undefined as empty.
 */
export interface Hl7MessageInput {
  segments: Array<{ name: string; fields?: unknown[] }>;
  delimiters?: Partial<Delimiters>;
  separator?: SegmentSeparator;
  trailingSeparator?: boolean;
  verbatim?: Record<string, string>;
}

interface WriteState {
  d: Delimiters;
  verbatim: Record<string, string> | undefined;
  segment: number;
  field: number;
  where: string;
}

function leafText(v: unknown, st: WriteState, r: number, c: number, sc: number): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') {
    if (st.verbatim !== undefined) {
      const raw = st.verbatim[leafKey(st.segment, st.field, r, c, sc)];
      // Reuse the received spelling only while the value is still the one it spells.
      if (typeof raw === 'string' && decodeLeaf(raw, st.d) === v) return raw;
    }
    return encodeLeaf(v, st.d);
  }
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return encodeLeaf(String(v), st.d);
  throw new Hl7Error(`${st.where}: a value must be text, a number or a boolean, got ${Array.isArray(v) ? 'an array nested too deep' : v === null ? 'null' : typeof v}`);
}

function writeComponent(v: unknown, st: WriteState, r: number, c: number): string {
  if (!Array.isArray(v)) return leafText(v, st, r, c, 0);
  let out = '';
  for (let sc = 0; sc < v.length; sc++) out += (sc === 0 ? '' : st.d.subcomponent) + leafText(v[sc], st, r, c, sc);
  return out;
}

function writeRepetition(v: unknown, st: WriteState, r: number): string {
  if (!Array.isArray(v)) return leafText(v, st, r, 0, 0);
  let out = '';
  for (let c = 0; c < v.length; c++) out += (c === 0 ? '' : st.d.component) + writeComponent(v[c], st, r, c);
  return out;
}

function writeField(v: unknown, st: WriteState): string {
  if (!Array.isArray(v)) return leafText(v, st, 0, 0, 0);
  let out = '';
  for (let r = 0; r < v.length; r++) out += (r === 0 ? '' : st.d.repetition) + writeRepetition(v[r], st, r);
  return out;
}

function delimitersOf(msg: Hl7MessageInput): Delimiters {
  const d = { ...STANDARD_DELIMITERS, ...(msg.delimiters ?? {}) } as Delimiters;
  const chars: unknown[] = [d.field, d.component, d.repetition, d.escape, d.subcomponent];
  if (d.truncation !== undefined) chars.push(d.truncation);
  const seen = new Set<string>();
  for (const c of chars) {
    if (typeof c !== 'string' || c.length !== 1) throw new Hl7Error('delimiters must be single characters');
    if (!isUsableDelimiter(c)) throw new Hl7Error(`${describeChar(c)} is not a usable delimiter`);
    if (seen.has(c)) throw new Hl7Error(`the delimiters repeat '${c}'`);
    seen.add(c);
  }
  return d;
}

export function serializeHl7(msg: Hl7MessageInput): string {
  if (msg === null || typeof msg !== 'object' || !Array.isArray(msg.segments)) throw new Hl7Error('an HL7 message needs a segments array');
  if (msg.segments.length === 0) throw new Hl7Error('an HL7 message needs at least the MSH segment');
  const d = delimitersOf(msg);
  const separator = msg.separator ?? '\r';
  if (separator !== '\r' && separator !== '\n' && separator !== '\r\n') throw new Hl7Error('separator must be \\r, \\n or \\r\\n');
  const verbatim = msg.verbatim !== null && typeof msg.verbatim === 'object' ? msg.verbatim : undefined;
  const st: WriteState = { d, verbatim, segment: 0, field: 0, where: '' };
  const lines: string[] = [];
  for (let s = 0; s < msg.segments.length; s++) {
    const seg = msg.segments[s];
    const name = seg?.name;
    if (typeof name !== 'string' || !SEGMENT_NAME.test(name)) throw new Hl7Error(`segment ${s + 1} has an invalid name ${JSON.stringify(typeof name === 'string' && name.length > 12 ? `${name.slice(0, 12)}…` : name)}`);
    if ((s === 0) !== (name === 'MSH')) throw new Hl7Error(s === 0 ? 'the first segment must be MSH' : `segment ${s + 1} is a second MSH`);
    const fields = seg.fields ?? [];
    if (!Array.isArray(fields)) throw new Hl7Error(`segment ${s + 1} (${name}): fields must be an array`);
    let line = name;
    let first = 0;
    if (name === 'MSH') {
      line += d.field + encodingCharacters(d);
      first = 2; // MSH-1 and MSH-2 are the delimiters themselves
    }
    st.segment = s;
    for (let f = first; f < fields.length; f++) {
      st.field = f;
      st.where = `${name}-${f + 1}`;
      line += d.field + writeField(fields[f], st);
    }
    lines.push(line);
  }
  const body = lines.join(separator);
  return msg.trailingSeparator === false ? body : body + separator;
}
