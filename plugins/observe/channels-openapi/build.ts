import { createHash } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import {
  HTTP_METHODS,
  openApiDocument,
  type Channel,
  type ChannelBodyDoc,
  type Contributions,
  type FieldDescriptor,
  type OpenApiFragment,
  type ServiceMeta,
  type SvcConfig,
} from '../../../sdk/plugin/index.ts';

/** What the document is generated from: the running server's (or, offline, the CLI's) view. */
export interface ChannelsSource {
  config: SvcConfig;
  contributions: readonly Contributions[];
  serviceMeta: (service: string) => ServiceMeta | undefined;
}

type Json = Record<string, unknown>;

const ERROR_SCHEMA = 'ChannelError';
const CID = 'X-Svc-CID';
const CID_HEADERS = { [CID]: { $ref: `#/components/headers/${CID}` } };
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** The channels' part of an OpenAPI 3.1 document: paths, schemas, security schemes, the CID header. */
export function channelsFragment(src: ChannelsSource): OpenApiFragment {
  const build = new Builder(src);
  for (const channel of src.config.channel_rest) build.channel(channel);
  return {
    tags: [...build.tags].sort().map((name) => ({ name, description: `Channels of service ${name}` })),
    paths: build.paths,
    schemas: {
      [ERROR_SCHEMA]: {
        type: 'object',
        required: ['result', 'cid', 'details'],
        properties: {
          result: { const: 'Error' },
          cid: { type: 'string', description: `Correlation ID, the same as the ${CID} header; the server log has the full reason under it.` },
          details: { type: 'string', description: 'What went wrong, as far as a client may know.' },
        },
      },
      ...build.schemas,
    },
    securitySchemes: build.schemes,
    headers: { [CID]: { description: 'Correlation ID of the request: in the server log, and in the body of every error.', schema: { type: 'string' } } },
  };
}

/**
 * The OpenAPI 3.1 document of the channels. `info.version` is a digest of the rest, so it changes
 * whenever a channel, a service's input model or a security definition does.
 */
export function channelsDocument(src: ChannelsSource): Json {
  const doc = openApiDocument({ title: 'svc channels', version: '', description: DESCRIPTION }, [channelsFragment(src)]);
  const digest = createHash('sha256').update(JSON.stringify([doc.paths, doc.components])).digest('hex').slice(0, 12);
  (doc.info as Json).version = digest;
  return doc;
}

const DESCRIPTION =
  "The HTTP channels this server offers, generated from its config and each service's typed input model. " +
  `Every response carries the correlation ID in the ${CID} header; every error body is \`{result: "Error", cid, details}\`. ` +
  'A method a path does not list is answered 405 (Allow names those it does). Input fields may come from the path, ' +
  "the query string or the body; the channel's url_params_pri and params_pri decide which wins. " +
  'Requests that arrive while the server shuts down are answered 503 with `Connection: close`.';

class Builder {
  readonly paths: Record<string, Json> = {};
  readonly schemas: Json = {};
  readonly schemes: Json = {};
  readonly tags = new Set<string>();
  private readonly operationIds = new Set<string>();
  private readonly schemaNames = new Set<string>();

  constructor(private readonly src: ChannelsSource) {}

  channel(channel: Channel): void {
    const meta = this.src.serviceMeta(channel.service);
    const methods = channel.method ? [channel.method] : meta?.verbs.length ? meta.verbs : [...HTTP_METHODS];
    const item = (this.paths[channel.url_path] ??= {});
    // Built once per channel, and only if a method carries the fields in its body.
    let bodySchema: Json | undefined;
    const body = () => (bodySchema ??= this.bodySchema(channel, meta));
    this.tags.add(channel.service);
    for (const method of methods) item[method.toLowerCase()] = this.operation(channel, method, meta, body);
  }

  private operation(channel: Channel, method: string, meta: ServiceMeta | undefined, bodySchema: () => Json): Json {
    const model = meta?.input ?? null;
    const format = this.bodyDoc(channel.data_format);
    const withBody = METHODS_WITH_BODY.has(method);
    const fieldsIn = withBody ? (format?.fields ?? 'none') : 'none';
    const pathNames = [...channel.url_path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const parameters: Json[] = pathNames.map((name) => parameter(name, 'path', model?.[name], true));
    const rest = Object.entries(model ?? {}).filter(([name]) => !pathNames.includes(name));
    if (fieldsIn === 'none') for (const [name, field] of rest) parameters.push(parameter(name, 'query', field, field.required));
    const success = this.first((c) => c.channelOpenApi?.success?.(channel));
    const op: Json = {
      operationId: this.operationId(channel.name, method),
      summary: `Channel ${channel.name}`,
      description: describeOperation(channel, meta, success !== undefined),
      tags: [channel.service],
    };
    if (parameters.length) op.parameters = parameters;
    if (withBody) op.requestBody = requestBody(channel, format, fieldsIn === 'object' ? bodySchema() : (format?.schema ?? {}), fieldsIn === 'message' ? rest : []);
    const security = this.security(channel.security);
    if (security) op.security = security;
    else op['x-svc-security'] = channel.security;
    op.responses = this.responses(channel, method, format, success, model !== null, withBody);
    op['x-svc-channel'] = channel.name;
    return op;
  }

  /** The body of a channel whose format carries input fields as an object: its model's fields, as a named schema. */
  private bodySchema(channel: Channel, meta: ServiceMeta | undefined): Json {
    const model = meta?.input;
    if (!model) return { description: meta ? 'The service declares no typed input model: any fields.' : `Service ${channel.service} is not deployed: its input is unknown.` };
    const pathNames = new Set([...channel.url_path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!));
    const properties: Json = {};
    const required: string[] = [];
    for (const [name, field] of Object.entries(model)) {
      if (pathNames.has(name)) continue;
      properties[name] = fieldSchema(field, true);
      if (field.required) required.push(name);
    }
    const schema: Json = { type: 'object', description: `Input of service ${channel.service}; fields it does not declare reach it unchecked.`, properties };
    if (required.length) schema.required = required;
    const name = this.unique(this.schemaNames, `${safeName(channel.name)}.Input`);
    this.schemas[name] = schema;
    return { $ref: `#/components/schemas/${name}` };
  }

  private bodyDoc(format: string): ChannelBodyDoc | undefined {
    return this.first((c) => c.channelOpenApi?.bodies?.[format]);
  }

  /** Security requirements: one alternative per scheme the target stands for; undefined when no plugin describes it. */
  private security(target: string): Json[] | undefined {
    if (target === 'none') return [];
    const seen = new Set<string>();
    const config = this.src.config;
    const resolve = (t: string): Record<string, unknown> | undefined => {
      if (seen.has(t)) return undefined;
      seen.add(t);
      return this.first((c) => c.channelOpenApi?.security?.(t, config, resolve));
    };
    const schemes = resolve(target);
    if (!schemes || Object.keys(schemes).length === 0) return undefined;
    Object.assign(this.schemes, schemes);
    return Object.keys(schemes).map((name) => ({ [name]: [] }));
  }

  private responses(channel: Channel, method: string, format: ChannelBodyDoc | undefined, success: { status: number; description: string; schema: Json } | undefined, typed: boolean, withBody: boolean): Json {
    const out: Json = {};
    const noContent = method === 'HEAD';
    if (success) out[success.status] = { description: success.description, headers: CID_HEADERS, ...(noContent ? {} : { content: { 'application/json': { schema: success.schema } } }) };
    else {
      const description = "The service's answer (a service may choose another status and content type).";
      out['200'] = { description, headers: CID_HEADERS, ...(noContent ? {} : { content: { [format?.replyMediaType ?? '*/*']: { schema: {} } } }) };
    }
    const why: Record<number, string[]> = {};
    const add = (status: number, reason: string) => void (why[status] ??= []).push(reason);
    if (typed) add(400, "the input does not match the service's typed model; details names the field (INVALID_INPUT)");
    if (withBody && format && format.fields !== 'none') add(400, `the body cannot be read as ${channel.data_format} (MALFORMED_BODY)`);
    add(400, 'the request is malformed (MALFORMED_REQUEST)');
    if (channel.security !== 'none') add(401, 'missing or wrong credentials (UNAUTHORIZED)');
    if (withBody) add(413, `the body exceeds ${channel.body_limit ?? this.src.config.server.body_limit} bytes (PAYLOAD_TOO_LARGE)`);
    for (const c of this.src.contributions) for (const [status, reason] of Object.entries(c.channelOpenApi?.responses?.(channel, this.src.config) ?? {})) add(Number(status), reason);
    add(500, 'an internal failure (INTERNAL)');
    if (!success) {
      add(400, 'the service raised BadRequest (BAD_REQUEST)');
      add(401, 'the service raised Unauthorized');
      add(500, 'the service raised an exception, exceeded its memory or output limit, or is not deployed (SERVICE_FAILED, SERVICE_MEMORY_LIMIT, SERVICE_OUTPUT_TOO_LARGE, SERVICE_OUTPUT_INVALID, SERVICE_NOT_DEPLOYED)');
      add(503, 'the service exceeded its time limit, its sandbox crashed, or it is quarantined (SERVICE_TIMEOUT, SANDBOX_CRASHED, SERVICE_QUARANTINED, SERVICE_UNAVAILABLE)');
    }
    add(503, 'the server is shutting down (SHUTTING_DOWN)');
    for (const status of Object.keys(why).map(Number).sort((a, b) => a - b)) out[status] = errorResponse(`${STATUS_CODES[status] ?? 'Error'}: ${why[status]!.join('; ')}.`);
    if (!success) out.default = errorResponse('Another error the service raised, with the same body: 403 Forbidden, 404 NotFound, 409 Conflict, 413 PayloadTooLarge, 502 BadGateway, 504 GatewayTimeout.');
    return out;
  }

  private first<T>(pick: (c: Contributions) => T | undefined): T | undefined {
    for (const c of this.src.contributions) {
      const v = pick(c);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  private operationId(channel: string, method: string): string {
    return this.unique(this.operationIds, `${safeName(channel)}.${method.toLowerCase()}`);
  }

  private unique(taken: Set<string>, name: string): string {
    let out = name;
    for (let n = 2; taken.has(out); n++) out = `${name}.${n}`;
    taken.add(out);
    return out;
  }
}

/** Component names allow letters, digits, `.`, `-` and `_`. */
function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

function fieldSchema(field: FieldDescriptor | undefined, withDescription: boolean): Json {
  if (!field) return { type: 'string' };
  const schema: Json = field.type === 'any' ? {} : { type: field.type };
  if (field.default !== undefined) schema.default = field.default;
  if (withDescription && field.description) schema.description = field.description;
  return schema;
}

function parameter(name: string, where: 'path' | 'query', field: FieldDescriptor | undefined, required: boolean): Json {
  const p: Json = { name, in: where, required, schema: fieldSchema(field, false) };
  if (field?.description) p.description = field.description;
  return p;
}

function requestBody(channel: Channel, format: ChannelBodyDoc | undefined, schema: Json, messageFields: Array<[string, FieldDescriptor]>): Json {
  const parts = [format?.description ?? `Data format ${channel.data_format}.`];
  if (messageFields.length) parts.push(`Input fields: ${messageFields.map(([name, f]) => `${name} (${f.type}${f.required ? ', required' : ''})`).join(', ')}.`);
  return { description: parts.join(' '), content: { [format?.mediaType ?? '*/*']: { schema } } };
}

function errorResponse(description: string): Json {
  return { description, headers: CID_HEADERS, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ERROR_SCHEMA}` } } } };
}

function describeOperation(channel: Channel, meta: ServiceMeta | undefined, queued: boolean): string {
  const parts = [`Runs service \`${channel.service}\`${queued ? ' later, from the Use queue' : ''}.`];
  if (!meta) parts.push('The service is not deployed: its input model is unknown and calls fail until it is.');
  else if (!meta.input) parts.push('The service declares no typed input model: fields are passed to it unchecked.');
  parts.push(`Data format: ${channel.data_format}.`);
  return parts.join(' ');
}
