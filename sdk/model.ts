/**
 * Typed input models. A service declares its input with `t.*` fields; the kernel
 * validates requests against the same description before the service runs (400 naming
 * the field), and the handler's `ctx.input` is typed from it.
 */
export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'any';
type Presence = 'required' | 'optional' | 'defaulted';

export type ValueOf<K extends FieldType> = K extends 'string'
  ? string
  : K extends 'integer' | 'number'
    ? number
    : K extends 'boolean'
      ? boolean
      : K extends 'object'
        ? Record<string, unknown>
        : K extends 'array'
          ? unknown[]
          : unknown;

export interface Field<K extends FieldType = FieldType, P extends Presence = Presence> {
  readonly type: K;
  readonly required: boolean;
  readonly default?: ValueOf<K>;
  readonly description?: string;
  /** Type-level only. */
  readonly __presence?: P;
}

export interface FieldOptions<V> {
  optional?: boolean;
  default?: V;
  description?: string;
}

type PresenceOf<O> = O extends { default: unknown } ? 'defaulted' : O extends { optional: true } ? 'optional' : 'required';

function builder<K extends FieldType>(type: K) {
  // biome-ignore lint/complexity/noBannedTypes: `{}` is the options a field was given none of
  return <O extends FieldOptions<ValueOf<K>> = {}>(opts?: O): Field<K, PresenceOf<O>> => {
    const field: { type: K; required: boolean; default?: ValueOf<K>; description?: string } = {
      type,
      required: !(opts?.optional === true || opts?.default !== undefined),
    };
    if (opts?.default !== undefined) field.default = opts.default;
    if (opts?.description !== undefined) field.description = opts.description;
    return field as Field<K, PresenceOf<O>>;
  };
}

export const t = {
  string: builder('string'),
  integer: builder('integer'),
  number: builder('number'),
  boolean: builder('boolean'),
  object: builder('object'),
  array: builder('array'),
  any: builder('any'),
};

export type Model = Record<string, Field>;

type OptionalKeys<M extends Model> = { [K in keyof M]: M[K] extends Field<FieldType, 'optional'> ? K : never }[keyof M];
type RequiredKeys<M extends Model> = Exclude<keyof M, OptionalKeys<M>>;

/** What `ctx.input` holds for a model: declared fields typed, others passed through as unknown. */
export type InputOf<M extends Model> = { [K in RequiredKeys<M>]: ValueOf<M[K]['type']> } & {
  [K in OptionalKeys<M>]?: ValueOf<M[K]['type']>;
} & Record<string, unknown>;
