import type { FieldDescriptor } from '../sandbox/protocol.ts';

/**
 * Checks a request's input against a service's typed model, before the service runs.
 * Values that arrived as text (URL parameters, XML/form/HL7 fields) are converted to the
 * declared type; values from a JSON payload must already have it. Defaults fill absent optional fields.
 * Returns the problem (naming the field) or undefined.
 */
export type InputChecker = (input: Record<string, unknown>, textKeys: ReadonlySet<string>, issues?: Array<{ field: string; message: string }>) => string | undefined;

/** With `issues`, the checker goes on past the first problem and lists every field's there; it returns the first either way. */
export function compileModel(model: Record<string, FieldDescriptor> | null): InputChecker | undefined {
  if (!model) return undefined;
  const fields = Object.entries(model);
  return function checkInput(input, textKeys, issues) {
    let first: string | undefined;
    for (const [name, field] of fields) {
      let value = input[name];
      let problem: string | undefined;
      if (value === undefined || value === null) {
        if (field.required) problem = `missing required field '${name}'`;
        else if (field.default !== undefined) input[name] = structuredClone(field.default);
      } else {
        // Text that does not convert stays text, and fails the type check below.
        if (textKeys.has(name) && typeof value === 'string' && (value = fromText(value, field.type)) !== INVALID) input[name] = value;
        if (value === INVALID || !hasType(value, field.type)) problem = `field '${name}' must be ${article(field.type)}`;
      }
      if (problem === undefined) continue;
      if (!issues) return problem;
      issues.push({ field: name, message: problem });
      first ??= problem;
    }
    return first;
  };
}

const INVALID = Symbol('invalid');

function fromText(text: string, type: FieldDescriptor['type']): unknown {
  switch (type) {
    case 'integer':
      return /^[-+]?\d+$/.test(text) ? Number(text) : INVALID;
    case 'number':
      return text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : INVALID;
    case 'boolean':
      return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : INVALID;
    default:
      return text;
  }
}

function hasType(value: unknown, type: FieldDescriptor['type']): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    default:
      return true;
  }
}

function article(type: string): string {
  return type === 'integer' || type === 'object' || type === 'array' || type === 'any' ? `an ${type}` : `a ${type}`;
}
