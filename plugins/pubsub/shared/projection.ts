import type { PubSubMessageView } from '../../capabilities.ts';
import { formatDuration } from './duration.ts';

/**
 * How one message looks in each of its representations: the engine's view (plugins/capabilities.ts), its row in
 * table pubsub_message, variant A's get body and variant B's `meta`. A field added or renamed here changes all of
 * them at once; the per-representation code below only interprets this table.
 *
 * - `prop`: the property on the view and on the engine's Message.
 * - `source`: 'delivery' values belong to one get, not to the message (they are the view's arguments, never
 *   stored); 'engine' values are stored but not shown; 'derived' rows compute a second output from `prop`.
 * - `sql`: the column and how it is typed; `text?`/`int?` store undefined as NULL. A `json` column stores the
 *   engine's JSON text of the value (property `text`), which the engine keeps anyway to size the message.
 * - `a`, `b`: the key, its place (`at`) among the keys of the body, `format` ('iso': ISO 8601 from milliseconds;
 *   'age': H:MM:SS.ffffff since the get) and what an undefined value becomes: `absent` 'omit' leaves the key out,
 *   any other value is written instead. Absent keys are always the last ones, so a body has one shape per set of
 *   present fields.
 */
export const FIELDS = [
  { prop: 'msgId', sql: { column: 'msg_id', kind: 'text' }, a: { at: 6, key: 'msg_id' }, b: { at: 4, key: 'msg_id' } },
  { prop: 'seq', source: 'engine', sql: { column: 'seq', kind: 'int' } },
  { prop: 'topic', sql: { column: 'topic', kind: 'text' }, a: { at: 11, key: 'topic_name' }, b: { at: 0, key: 'topic_name' } },
  { prop: 'data', sql: { column: 'data', kind: 'json', text: 'dataJson' }, a: { at: 0, key: 'data' } },
  { prop: 'size', sql: { column: 'size', kind: 'int' }, a: { at: 9, key: 'size' }, b: { at: 1, key: 'size' } },
  { prop: 'mimeType', sql: { column: 'mime_type', kind: 'text' }, a: { at: 5, key: 'mime_type' } },
  { prop: 'priority', sql: { column: 'priority', kind: 'int' }, a: { at: 7, key: 'priority' }, b: { at: 2, key: 'priority' } },
  { prop: 'expiration', sql: { column: 'expiration', kind: 'int?' }, a: { at: 2, key: 'expiration', absent: 0 }, b: { at: 3, key: 'expiration', absent: 0 } },
  {
    prop: 'expiresAt',
    sql: { column: 'expires_at', kind: 'int?' },
    a: { at: 12, key: 'expiration_time_iso', format: 'iso', absent: 'omit' },
    b: { at: 11, key: 'expiration_time_iso', format: 'iso', absent: 'omit' },
  },
  { prop: 'pubTime', sql: { column: 'pub_time', kind: 'int' }, a: { at: 8, key: 'pub_time_iso', format: 'iso' }, b: { at: 6, key: 'pub_time_iso', format: 'iso' } },
  { prop: 'pubTime', source: 'derived', b: { at: 8, key: 'time_since_pub', format: 'age' } },
  { prop: 'recvTime', sql: { column: 'recv_time', kind: 'int' }, b: { at: 7, key: 'recv_time_iso', format: 'iso' } },
  { prop: 'recvTime', source: 'derived', b: { at: 9, key: 'time_since_recv', format: 'age' } },
  { prop: 'correlId', sql: { column: 'correl_id', kind: 'text?' }, a: { at: 13, key: 'correl_id', absent: 'omit' }, b: { at: 5, key: 'correl_id', absent: '' } },
  { prop: 'inReplyTo', sql: { column: 'in_reply_to', kind: 'text?' }, a: { at: 14, key: 'in_reply_to', absent: 'omit' }, b: { at: 13, key: 'in_reply_to', absent: 'omit' } },
  { prop: 'extClientId', sql: { column: 'ext_client_id', kind: 'text?' }, a: { at: 3, key: 'ext_client_id', absent: '' }, b: { at: 12, key: 'ext_client_id', absent: 'omit' } },
  // Not stored: only GD messages are, so a loaded message is GD.
  { prop: 'hasGd', a: { at: 4, key: 'has_gd' } },
  { prop: 'publisher', source: 'engine', sql: { column: 'publisher', kind: 'text' } },
  { prop: 'subKey', source: 'delivery', a: { at: 10, key: 'sub_key' }, b: { at: 10, key: 'sub_key' } },
  { prop: 'deliveryCount', source: 'delivery', a: { at: 1, key: 'delivery_count' } },
] as const satisfies readonly Field[];

type Format = 'iso' | 'age';
type SqlKind = 'text' | 'text?' | 'int' | 'int?' | 'json';

interface Output {
  at: number;
  key: string;
  format?: Format;
  absent?: 'omit' | string | number;
}

interface Field {
  prop: string;
  source?: 'delivery' | 'engine' | 'derived';
  sql?: { column: string; kind: SqlKind; text?: string };
  a?: Output;
  b?: Output;
}

type Row = (typeof FIELDS)[number];
type Side = 'a' | 'b';
type Shown<S extends Side> = Extract<Row, Record<S, Output>>;
type Raw<R> = R extends { prop: infer P extends keyof PubSubMessageView } ? PubSubMessageView[P] : never;
type Present<R, O> = O extends { format: Format } ? string : Exclude<Raw<R>, undefined>;
type Value<R, O> = O extends { absent: 'omit' } | { format: Format } ? Present<R, O> : O extends { absent: infer D } ? Present<R, O> | D : Raw<R>;
type Omitted<O> = O extends { absent: 'omit' } ? true : false;
type Body<S extends Side> = {
  [R in Shown<S> as Omitted<R[S]> extends true ? never : R[S]['key']]: Value<R, R[S]>;
} & {
  [R in Shown<S> as Omitted<R[S]> extends true ? R[S]['key'] : never]?: Value<R, R[S]>;
};

/** One message of variant A's get response. */
type MessageBodyA = Body<'a'>;
/** Variant B's `meta` of one message. */
type MetaBodyB = Body<'b'>;
/** The view's fields that belong to the message itself. */
type ViewedMessage = Omit<PubSubMessageView, 'subKey' | 'deliveryCount'>;

type Compiled = (...args: never[]) => unknown;

/**
 * Builds `(m, ...args) => ({...})` as generated source, once per representation: a get projects every message it
 * returns, and an object literal with fixed keys is what V8 builds fastest (a loop assigning keys from the table
 * measured about 60% slower). The table is static source, and every name goes in quoted by JSON.stringify.
 */
function compile(name: string, params: readonly string[], present: ReadonlyArray<[key: string, expr: string]>, omittable: ReadonlyArray<[key: string, prop: string, expr: string]>, formatters: ReadonlyArray<(n: number) => string> = []): Compiled {
  const q = JSON.stringify;
  const source = [
    `const out = {${present.map(([key, expr]) => `${q(key)}: ${expr}`).join(', ')}};`,
    ...omittable.map(([key, prop, expr]) => `if (m[${q(prop)}] !== undefined) out[${q(key)}] = ${expr};`),
    'return out;',
  ].join('\n');
  return new Function(...formatters.map((_, i) => `f${i}`), `return function ${name}(${params.join(', ')}) {\n${source}\n}`)(...formatters);
}

/**
 * A formatter that remembers its last input: the messages of one get were mostly published in
 * the same few milliseconds, so consecutive messages repeat a field's timestamp (and its age).
 * Each formatted field has its own, so two fields do not evict each other.
 */
function lastValueCached(format: (n: number) => string): (n: number) => string {
  let last = NaN;
  let text = '';
  return (n) => (n === last ? text : ((last = n), (text = format(n))));
}

const isoOf = (ms: number) => new Date(ms).toISOString();

function compileSide(name: string, side: Side): Compiled {
  const outs = FIELDS.flatMap((f: Field) => (f[side] ? [{ prop: f.prop, ...f[side] }] : [])).sort((x, y) => x.at - y.at);
  outs.forEach((o, i) => {
    if (o.at !== i) throw new Error(`pubsub projection '${side}': '${o.key}' is at ${o.at}, expected ${i} (places run from 0, each once)`);
    if (o.absent !== 'omit' && outs[i - 1]?.absent === 'omit') throw new Error(`pubsub projection '${side}': '${o.key}' follows a key that may be left out`);
  });
  const formatters: Array<(n: number) => string> = [];
  const render = (o: Output & { prop: string }): string => {
    const v = `m[${JSON.stringify(o.prop)}]`;
    let shown = v;
    if (o.format) {
      shown = `f${formatters.length}(${o.format === 'age' ? `now - ${v}` : v})`;
      formatters.push(lastValueCached(o.format === 'age' ? formatDuration : isoOf));
    }
    return o.absent === undefined || o.absent === 'omit' ? shown : `${v} === undefined ? ${JSON.stringify(o.absent)} : ${shown}`;
  };
  const present = outs.filter((o) => o.absent !== 'omit').map((o): [string, string] => [o.key, render(o)]);
  const omittable = outs.filter((o) => o.absent === 'omit').map((o): [string, string, string] => [o.key, o.prop, render(o)]);
  return compile(name, outs.some((o) => o.format === 'age') ? ['m', 'now'] : ['m'], present, omittable, formatters);
}

function compileView(): Compiled {
  const viewed = FIELDS.filter((f: Field) => f.source === undefined || f.source === 'delivery');
  const delivery = viewed.filter((f: Field) => f.source === 'delivery').map((f) => f.prop);
  return compile(
    'toView',
    ['m', ...delivery],
    viewed.map((f: Field) => [f.prop, f.source === 'delivery' ? f.prop : `m[${JSON.stringify(f.prop)}]`]),
    [],
  );
}

/** The view of a message in one delivery (the engine's side of plugins/capabilities.ts). */
export const toView = compileView() as (m: ViewedMessage, subKey: string, deliveryCount: number) => PubSubMessageView;
/** A message as variant A's get returns it. */
export const toMessageA = compileSide('toMessageA', 'a') as (m: PubSubMessageView) => MessageBodyA;
/** Variant B's `meta` of a message; ages are counted to `now`. */
export const toMetaB = compileSide('toMetaB', 'b') as (m: PubSubMessageView, now: number) => MetaBodyB;
