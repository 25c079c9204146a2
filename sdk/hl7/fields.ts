import { Hl7Error } from './types.ts';
import type { Hl7Message, Segment } from './types.ts';

/**
 * Fields by HL7 position. A shorter path means the first component (and first subcomponent),
 * which is HL7's own rule for reading a composite as a simple value: `PID.5` of
 * `Doe^John` is `Doe`, and so is `PID.5.1` and `PID.5.1.1`. Isolate-safe.
 */

/** A parsed path: occurrence and repetition are 1-based, absent parts are undefined. */
interface FieldPath {
  segment: string;
  occurrence: number | undefined;
  field: number;
  repetition: number;
  component: number;
  subcomponent: number;
}

const PATH = /^([A-Z][A-Z0-9]{2})(?:\[(\d+)\])?[.-](\d+)(?:\[(\d+)\])?(?:\.(\d+)(?:\.(\d+))?)?$/;

function parsePath(path: string): FieldPath {
  const m = PATH.exec(path);
  if (m === null) throw new Hl7Error(`not an HL7 field path: ${JSON.stringify(path)} (expected e.g. PID.5.1, OBX[2].5, PID.3[2].1)`);
  const n = (s: string | undefined, dflt: number) => (s === undefined ? dflt : Number(s));
  const p: FieldPath = {
    segment: m[1]!,
    occurrence: m[2] === undefined ? undefined : Number(m[2]),
    field: Number(m[3]),
    repetition: n(m[4], 1),
    component: n(m[5], 1),
    subcomponent: n(m[6], 1),
  };
  if (p.field < 1 || p.repetition < 1 || p.component < 1 || p.subcomponent < 1 || (p.occurrence !== undefined && p.occurrence < 1)) {
    throw new Hl7Error(`HL7 positions count from 1: ${JSON.stringify(path)}`);
  }
  return p;
}

function valueIn(seg: Segment, p: FieldPath): string | undefined {
  const v = seg.fields[p.field - 1]?.[p.repetition - 1]?.[p.component - 1]?.[p.subcomponent - 1];
  return v === undefined || v === '' ? undefined : v;
}

/**
 * One value by path: `PID.5.1`, `PID-5.1`, `OBX[2].5` (second OBX), `PID.3[2].1` (second
 * repetition of PID-3). Undefined when absent or empty.
 */
export function getField(msg: Pick<Hl7Message, 'segments'>, path: string): string | undefined {
  const p = parsePath(path);
  let seen = 0;
  const wanted = p.occurrence ?? 1;
  for (const seg of msg.segments) {
    if (seg.name !== p.segment) continue;
    if (++seen === wanted) return valueIn(seg, p);
  }
  return undefined;
}

/** The value at `path` in every occurrence of the segment, in order (absent ones as undefined). */
export function getAllFields(msg: Pick<Hl7Message, 'segments'>, path: string): Array<string | undefined> {
  const p = parsePath(path);
  if (p.occurrence !== undefined) throw new Hl7Error('getAllFields reads every occurrence: leave out [n] after the segment name');
  const out: Array<string | undefined> = [];
  for (const seg of msg.segments) if (seg.name === p.segment) out.push(valueIn(seg, p));
  return out;
}
