/**
 * Named fields shared by the form and multipart formats: a name given once holds a string,
 * a name given again becomes a list, and a name ending in `[]` is always a list (stored
 * without the brackets), so a service can rely on the shape of fields it expects to repeat.
 */

export type FieldValue = string | string[];
export type Fields = Record<string, FieldValue>;

/** Names that would reach an object's prototype when merged into plain objects. */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

export class FieldNameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldNameError';
  }
}

export function addField(fields: Fields, rawName: string, value: string): void {
  const list = rawName.endsWith('[]');
  const name = list ? rawName.slice(0, -2) : rawName;
  if (FORBIDDEN.has(name)) throw new FieldNameError(`the field name ${JSON.stringify(name)} is not allowed`);
  const current = Object.hasOwn(fields, name) ? fields[name] : undefined;
  if (current === undefined) fields[name] = list ? [value] : value;
  else if (Array.isArray(current)) current.push(value);
  else fields[name] = [current, value];
}
