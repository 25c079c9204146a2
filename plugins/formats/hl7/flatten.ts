import type { Hl7Message } from '../../../sdk/hl7/types.ts';

// Host side only: the hl7 channel merges this view into ctx.input; services read any other
// spelling of a path with the SDK's getField.

/**
 * The flat view merged into a service's input: the non-empty values of the first occurrence
 * of each segment, first repetition. `SEG.F` is the field's first component, `SEG.F.C` each
 * component (its first subcomponent), and `SEG.F.C.S` each subcomponent of a component that
 * has several. Other spellings (`PID.5.1.1`, `OBX[2].5`, `PID.3[2]`) are for getField.
 */
export function flattenFields(msg: Hl7Message): Record<string, string> {
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const seg of msg.segments) {
    if (seen.has(seg.name)) continue;
    seen.add(seg.name);
    for (let f = 0; f < seg.fields.length; f++) {
      const rep = seg.fields[f]![0];
      if (rep === undefined) continue;
      const fieldPath = `${seg.name}.${f + 1}`;
      for (let c = 0; c < rep.length; c++) {
        const comp = rep[c]!;
        const first = comp[0];
        if (first !== undefined && first !== '') {
          if (c === 0) out[fieldPath] = first;
          out[`${fieldPath}.${c + 1}`] = first;
        }
        if (comp.length > 1) {
          for (let s = 0; s < comp.length; s++) if (comp[s] !== '') out[`${fieldPath}.${c + 1}.${s + 1}`] = comp[s]!;
        }
      }
    }
  }
  return out;
}
