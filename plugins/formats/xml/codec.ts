import { XMLBuilder, XMLParser, XMLValidator } from 'fast-xml-parser';
import { StrictEntityDecoder, XmlRejected } from './entities.ts';

/**
 * XML ⇄ plain data. Reading: the root element's content becomes an object with the root's
 * name under `#root`, attributes under `@name`, text beside children under `#text`, every
 * value a string; an element is an array when it repeats or its path is listed in
 * `alwaysArray`. Writing reverses it. See README.md for the rules with examples.
 */

export const ATTRIBUTE_PREFIX = '@';
export const TEXT_KEY = '#text';
export const ROOT_KEY = '#root';
/** Root element of output that does not name one itself. */
export const DEFAULT_ROOT = 'response';
/** Element name of array items written under the default root. */
export const ARRAY_ITEM = 'item';

export interface XmlReadOptions {
  /**
   * Element paths that are arrays even when they occur once: dotted names below the root as the
   * payload shows them (`lines.line`), or `..name` for that element name at any depth.
   */
  alwaysArray?: readonly string[];
  /** Deepest element nesting accepted. */
  maxDepth?: number;
  /** Most entity and character references one document may hold. */
  maxEntityReferences?: number;
}

export const XML_READ_DEFAULTS = { maxDepth: 100, maxEntityReferences: 10_000 } as const;

/**
 * Longest reason a client is told. Parser messages quote names from the document: a 300 KB
 * malformed document came back as a 1 MB error body.
 */
export const MAX_REASON_LENGTH = 300;

/** The text cut to `room` characters, the last one an ellipsis; a surrogate pair is not split. */
function clip(text: string, room = MAX_REASON_LENGTH): string {
  if (text.length <= room) return text;
  let end = room - 1;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** A body that is not acceptable XML; `message` is the reason a client is told, at most MAX_REASON_LENGTH long. */
export class XmlError extends Error {
  constructor(message: string) {
    super(clip(message));
    this.name = 'XmlError';
  }
}

export type XmlPayload = Record<string, unknown> & { '#root': string };

export type XmlReader = (text: string) => XmlPayload;

// `<!DOCTYPE` in any case: covers external entities (XXE) and entity expansion bombs at once.
const DOCTYPE = /<!DOCTYPE/i;
// Characters XML 1.0 does not allow anywhere (the parser lets them through). Decoded bodies hold
// no lone surrogates: the UTF-8 decoder is strict and ISO-8859-1 has none.
const NOT_XML_CHAR = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/;

function lineAndColumn(text: string, index: number): string {
  let line = 1;
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line++;
  return `line ${line}, column ${index - text.lastIndexOf('\n', index - 1)}`;
}

function arrayMatcher(paths: readonly string[]): (jPath: string) => boolean {
  const exact = new Set<string>();
  const anywhere = new Set<string>();
  for (const p of paths) {
    if (p.startsWith('..')) anywhere.add(p.slice(2));
    else exact.add(p);
  }
  return (jPath) => {
    // The parser's jPath starts at the root element; the payload's paths start below it.
    const dot = jPath.indexOf('.');
    if (dot === -1) return false; // the root itself is never an array
    if (exact.has(jPath.slice(dot + 1))) return true;
    return anywhere.size > 0 && anywhere.has(jPath.slice(jPath.lastIndexOf('.') + 1));
  };
}

function refuseName(name: string): string {
  throw new XmlRejected(`the name ${JSON.stringify(name)} is not allowed (it would shadow a JavaScript object property)`);
}

export function createXmlReader(options: XmlReadOptions = {}): XmlReader {
  const maxDepth = options.maxDepth ?? XML_READ_DEFAULTS.maxDepth;
  const decoder = new StrictEntityDecoder(options.maxEntityReferences ?? XML_READ_DEFAULTS.maxEntityReferences);
  const isArrayPath = arrayMatcher(options.alwaysArray ?? []);
  const parser = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: ATTRIBUTE_PREFIX,
    textNodeName: TEXT_KEY,
    parseTagValue: false,
    parseAttributeValue: false,
    trimValues: true,
    ignoreDeclaration: true,
    ignorePiTags: true,
    processEntities: true,
    entityDecoder: decoder,
    // The parser does not count the root element; max_depth does.
    maxNestedTags: maxDepth - 1,
    onDangerousProperty: refuseName,
    isArray: (_name, jPath, _leaf, isAttribute) => !isAttribute && isArrayPath(jPath as string),
  });
  return (text) => {
    if (DOCTYPE.test(text)) throw new XmlError('DOCTYPE declarations are not allowed');
    // Refused here, or the payload could hold text no XML answer can carry (an echo would be a 500).
    const bad = NOT_XML_CHAR.exec(text);
    if (bad) throw new XmlError(`the character U+${bad[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} is not allowed in XML (${lineAndColumn(text, bad.index)})`);
    const verdict = XMLValidator.validate(text);
    if (verdict !== true) {
      // The position matters more than the end of a long message: it keeps its place.
      const where = ` (line ${verdict.err.line}, column ${verdict.err.col})`;
      throw new XmlError(clip(verdict.err.msg, MAX_REASON_LENGTH - where.length) + where);
    }
    let doc: Record<string, unknown>;
    try {
      doc = parser.parse(text) as Record<string, unknown>;
    } catch (err) {
      const message = err instanceof Error ? err.message.replace(/^\[SECURITY\] /, '') : String(err);
      throw new XmlError(message === 'Maximum nested tags exceeded' ? `elements nested deeper than ${maxDepth} levels` : message);
    }
    const names = Object.keys(doc);
    if (names.length !== 1) throw new XmlError('a document needs exactly one root element');
    const root = names[0]!;
    return toPayload(root, doc[root]);
  };
}

function toPayload(root: string, content: unknown): XmlPayload {
  if (content !== null && typeof content === 'object' && !Array.isArray(content)) {
    return { [ROOT_KEY]: root, ...(content as Record<string, unknown>) };
  }
  const payload: XmlPayload = { [ROOT_KEY]: root };
  if (typeof content === 'string' && content !== '') payload[TEXT_KEY] = content;
  return payload;
}

// ---------------------------------------------------------------------------------------------
// Writing: service output → XML text.

const NAME = /^[\p{L}_][\p{L}\p{N}\p{Mn}\p{Mc}_.\-\u00B7]*(?::[\p{L}_][\p{L}\p{N}\p{Mn}\p{Mc}_.\-\u00B7]*)?$/u;
// Characters XML 1.0 cannot carry at all, even as references; and lone surrogates.
const NOT_XML = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const builder = new XMLBuilder({
  ignoreAttributes: false,
  attributeNamePrefix: ATTRIBUTE_PREFIX,
  textNodeName: TEXT_KEY,
  suppressEmptyNode: false,
  processEntities: true,
  format: false,
});

export const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

function checkText(s: string, where: string): void {
  if (NOT_XML.test(s)) throw new XmlError(`${where}: holds a character XML cannot carry`);
}

/** Checks names and text of the value to write; builds nothing. */
function checkTree(v: unknown, where: string, depth: number): void {
  if (depth > 200) throw new XmlError(`${where}: nested deeper than 200 levels`);
  if (typeof v === 'string') return checkText(v, where);
  if (v === null || typeof v !== 'object') return;
  if (Array.isArray(v)) {
    for (const item of v) checkTree(item, where, depth + 1);
    return;
  }
  for (const [key, child] of Object.entries(v)) {
    if (key === TEXT_KEY) {
      checkTree(child, where, depth + 1);
      continue;
    }
    const isAttribute = key.startsWith(ATTRIBUTE_PREFIX);
    const name = isAttribute ? key.slice(ATTRIBUTE_PREFIX.length) : key;
    if (!NAME.test(name)) throw new XmlError(`${where}: ${JSON.stringify(key)} is not a valid XML ${isAttribute ? 'attribute' : 'element'} name`);
    if (isAttribute && child !== null && typeof child === 'object') throw new XmlError(`${where}.${key}: an attribute value must be text, a number or a boolean`);
    checkTree(child, `${where}.${key}`, depth + 1);
  }
}

function rootAndContent(value: unknown): [string, unknown] {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const obj = value as Record<string, unknown>;
    const named = obj[ROOT_KEY];
    if (named !== undefined) {
      if (typeof named !== 'string' || !NAME.test(named)) throw new XmlError(`${ROOT_KEY} must be a valid XML element name, got ${JSON.stringify(named)}`);
      const { [ROOT_KEY]: _omit, ...rest } = obj;
      return [named, rest];
    }
    const keys = Object.keys(obj);
    const only = keys[0];
    if (keys.length === 1 && only !== undefined && !only.startsWith(ATTRIBUTE_PREFIX) && only !== TEXT_KEY && !Array.isArray(obj[only])) {
      return [only, obj[only]];
    }
    return [DEFAULT_ROOT, obj];
  }
  if (Array.isArray(value)) return [DEFAULT_ROOT, { [ARRAY_ITEM]: value }];
  return [DEFAULT_ROOT, value === null || value === undefined ? '' : value];
}

/** Service output (object, array or scalar) → an XML document with declaration. */
export function buildXml(value: unknown): string {
  const [root, content] = rootAndContent(value);
  if (!NAME.test(root)) throw new XmlError(`${JSON.stringify(root)} is not a valid XML element name`);
  checkTree(content, root, 0);
  return XML_DECLARATION + builder.build({ [root]: content });
}

/** Turns a body's bytes into text: UTF-8 unless the declaration names ISO-8859-1 or US-ASCII. */
export function decodeXmlBytes(body: Uint8Array): string {
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 200)).toString('latin1');
  const m = /^(?:\u00EF\u00BB\u00BF)?<\?xml[^>]*\bencoding\s*=\s*["']([A-Za-z0-9._-]+)["']/.exec(head);
  const encoding = (m?.[1] ?? 'utf-8').toLowerCase();
  if (encoding === 'iso-8859-1' || encoding === 'latin1' || encoding === 'us-ascii' || encoding === 'ascii') {
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1');
  }
  if (encoding !== 'utf-8' && encoding !== 'utf8') throw new XmlError(`unsupported encoding ${JSON.stringify(m?.[1])}: send UTF-8`);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(body);
  } catch {
    throw new XmlError('the body is not valid UTF-8');
  }
}
