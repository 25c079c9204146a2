import { addField, FieldNameError } from '../shared/fields.ts';
import type { Fields } from '../shared/fields.ts';

/**
 * application/x-www-form-urlencoded ⇄ fields (WHATWG URL standard: `+` is a space, names and
 * values percent-decoded as UTF-8). Unlike URLSearchParams, a broken percent escape or bytes
 * that are not UTF-8 are an error instead of silently becoming U+FFFD.
 */

export class FormError extends Error {
  constructor(message: string, readonly tooLarge = false) {
    super(message);
    this.name = 'FormError';
  }
}

export const FORM_DEFAULTS = { maxFields: 1000 } as const;

/** Names and values in error messages: quoted, and short (a field may be as long as the body limit). */
function quoted(s: string): string {
  return JSON.stringify(s.length > 40 ? s.slice(0, 40) + '…' : s);
}

function decodePart(s: string, which: string): string {
  const plus = s.indexOf('+') === -1 ? s : s.replace(/\+/g, ' ');
  if (plus.indexOf('%') === -1) return plus;
  try {
    return decodeURIComponent(plus);
  } catch {
    throw new FormError(`${which} ${quoted(s)} has a malformed percent-encoding or is not UTF-8`);
  }
}

export function parseForm(text: string, maxFields: number = FORM_DEFAULTS.maxFields): Fields {
  const fields: Fields = {};
  if (text.length === 0) return fields;
  let count = 0;
  for (const pair of text.split('&')) {
    if (pair.length === 0) continue; // `a=1&&b=2`
    if (++count > maxFields) throw new FormError(`more than ${maxFields} form fields`, true);
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const rawValue = eq === -1 ? '' : pair.slice(eq + 1);
    const name = decodePart(rawName, 'field name');
    if (name.length === 0) throw new FormError('a form field has an empty name');
    try {
      addField(fields, name, decodePart(rawValue, `the value of ${quoted(name)}`));
    } catch (err) {
      if (err instanceof FieldNameError) throw new FormError(err.message);
      throw err;
    }
  }
  return fields;
}
