/**
 * Structural checks of an OpenAPI 3.1 document, from the specification's rules (no validator
 * package): the fields each object requires, where parameters may be and that path templates
 * and path parameters agree, response codes, unique operation IDs, security requirements naming
 * declared schemes, `$ref`s that resolve, and Schema Objects using JSON Schema's types. Returns
 * every problem with its JSON path; an empty list is a pass.
 */
type Json = Record<string, unknown>;

const OPERATIONS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PATH_ITEM_KEYS = new Set([...OPERATIONS, '$ref', 'summary', 'description', 'servers', 'parameters']);
const PARAMETER_IN = ['query', 'header', 'path', 'cookie'];
const JSON_TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];
const SCHEME_TYPES = ['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'];
const COMPONENT_NAME = /^[a-zA-Z0-9._-]+$/;
const RESPONSE_CODE = /^(default|[1-5](\d\d|XX))$/;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export function openApiProblems(doc: unknown): string[] {
  const problems: string[] = [];
  const fail = (path: string, message: string) => void problems.push(`${path}: ${message}`);
  if (!isObject(doc)) return ['$: not an object'];

  const resolve = (ref: string): unknown => {
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = doc;
    for (const part of ref.slice(2).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))) {
      if (!isObject(node) || !(part in node)) return undefined;
      node = node[part];
    }
    return node;
  };
  const deref = (v: unknown): unknown => (isObject(v) && typeof v.$ref === 'string' ? resolve(v.$ref) : v);

  if (typeof doc.openapi !== 'string' || !/^3\.1\.\d+$/.test(doc.openapi)) fail('$.openapi', 'must be 3.1.x');
  if (!isObject(doc.info)) fail('$.info', 'required object');
  else {
    if (typeof doc.info.title !== 'string') fail('$.info.title', 'required string');
    if (typeof doc.info.version !== 'string') fail('$.info.version', 'required string');
  }
  if (doc.paths === undefined && doc.components === undefined && doc.webhooks === undefined) fail('$', 'needs paths, components or webhooks');

  // Every $ref anywhere resolves.
  const walkRefs = (v: unknown, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walkRefs(x, `${path}[${i}]`));
    else if (isObject(v)) {
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string') {
          if (resolve(x) === undefined) fail(path, `$ref ${x} does not resolve`);
        } else walkRefs(x, `${path}.${k}`);
      }
    }
  };
  walkRefs(doc, '$');

  const checkSchema = (schema: unknown, path: string): void => {
    if (typeof schema === 'boolean') return;
    if (!isObject(schema)) return fail(path, 'a schema must be an object or a boolean');
    if (schema.type !== undefined) {
      const types = Array.isArray(schema.type) ? schema.type : [schema.type];
      for (const t of types) if (!JSON_TYPES.includes(t as string)) fail(`${path}.type`, `unknown JSON type ${String(t)}`);
    }
    if (schema.required !== undefined && (!Array.isArray(schema.required) || schema.required.some((r) => typeof r !== 'string'))) fail(`${path}.required`, 'must be an array of strings');
    if (schema.properties !== undefined) {
      if (!isObject(schema.properties)) fail(`${path}.properties`, 'must be an object');
      else for (const [k, s] of Object.entries(schema.properties)) checkSchema(s, `${path}.properties.${k}`);
    }
    if (schema.items !== undefined) checkSchema(schema.items, `${path}.items`);
    if (schema.additionalProperties !== undefined) checkSchema(schema.additionalProperties, `${path}.additionalProperties`);
    for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) {
      const list = schema[key];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length === 0) fail(`${path}.${key}`, 'must be a non-empty array');
      else list.forEach((s, i) => checkSchema(s, `${path}.${key}[${i}]`));
    }
  };

  const checkContent = (content: unknown, path: string) => {
    if (!isObject(content)) return fail(path, 'must be an object of media types');
    for (const [type, media] of Object.entries(content)) {
      if (!/^[^/\s]+\/[^/\s]+$/.test(type.split(';')[0]!.trim())) fail(`${path}.${type}`, 'not a media type or range');
      if (!isObject(media)) fail(`${path}.${type}`, 'must be a Media Type Object');
      else if (media.schema !== undefined) checkSchema(media.schema, `${path}.${type}.schema`);
    }
  };

  const components = isObject(doc.components) ? doc.components : {};
  for (const [kind, entries] of Object.entries(components)) {
    if (!isObject(entries)) {
      fail(`$.components.${kind}`, 'must be an object');
      continue;
    }
    for (const name of Object.keys(entries)) if (!COMPONENT_NAME.test(name)) fail(`$.components.${kind}.${name}`, 'component names are letters, digits, . - _');
  }
  for (const [name, s] of Object.entries((components.schemas ?? {}) as Json)) checkSchema(s, `$.components.schemas.${name}`);
  const schemes = (components.securitySchemes ?? {}) as Json;
  for (const [name, raw] of Object.entries(schemes)) {
    const s = deref(raw);
    const path = `$.components.securitySchemes.${name}`;
    if (!isObject(s) || !SCHEME_TYPES.includes(s.type as string)) {
      fail(path, `type must be one of ${SCHEME_TYPES.join(', ')}`);
      continue;
    }
    if (s.type === 'apiKey' && (typeof s.name !== 'string' || !['query', 'header', 'cookie'].includes(s.in as string))) fail(path, 'apiKey needs name and in (query, header, cookie)');
    if (s.type === 'http' && typeof s.scheme !== 'string') fail(path, 'http needs scheme');
  }
  for (const [name, h] of Object.entries((components.headers ?? {}) as Json)) {
    if (!isObject(h) || (h.schema === undefined) === (h.content === undefined)) fail(`$.components.headers.${name}`, 'a header has exactly one of schema and content');
  }

  const checkSecurity = (security: unknown, path: string) => {
    if (!Array.isArray(security)) return fail(path, 'must be an array of requirements');
    security.forEach((req, i) => {
      if (!isObject(req)) return fail(`${path}[${i}]`, 'must be an object');
      for (const [name, scopes] of Object.entries(req)) {
        if (!(name in schemes)) fail(`${path}[${i}]`, `names no declared security scheme: ${name}`);
        if (!Array.isArray(scopes)) fail(`${path}[${i}].${name}`, 'must be an array');
      }
    });
  };
  if (doc.security !== undefined) checkSecurity(doc.security, '$.security');

  const checkParameters = (list: unknown, path: string): Json[] => {
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
      fail(path, 'must be an array');
      return [];
    }
    const out: Json[] = [];
    const seen = new Set<string>();
    list.forEach((raw, i) => {
      const p = deref(raw);
      const at = `${path}[${i}]`;
      if (!isObject(p)) return fail(at, 'must be a Parameter Object');
      if (typeof p.name !== 'string' || !p.name) fail(at, 'name is required');
      if (!PARAMETER_IN.includes(p.in as string)) fail(at, `in must be one of ${PARAMETER_IN.join(', ')}`);
      if (p.in === 'path' && p.required !== true) fail(at, 'a path parameter must be required: true');
      if ((p.schema === undefined) === (p.content === undefined)) fail(at, 'exactly one of schema and content');
      if (p.schema !== undefined) checkSchema(p.schema, `${at}.schema`);
      const key = `${String(p.in)}:${String(p.name)}`;
      if (seen.has(key)) fail(at, `duplicate parameter ${key}`);
      seen.add(key);
      out.push(p);
    });
    return out;
  };

  const operationIds = new Set<string>();
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [template, rawItem] of Object.entries(paths)) {
    const base = `$.paths['${template}']`;
    if (!template.startsWith('/')) fail(base, 'a path must start with /');
    const item = deref(rawItem);
    if (!isObject(item)) {
      fail(base, 'must be a Path Item Object');
      continue;
    }
    for (const key of Object.keys(item)) if (!PATH_ITEM_KEYS.has(key) && !key.startsWith('x-')) fail(`${base}.${key}`, 'not a Path Item field');
    const templated = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const shared = checkParameters(item.parameters, `${base}.parameters`);
    for (const method of OPERATIONS) {
      const op = item[method];
      if (op === undefined) continue;
      const at = `${base}.${method}`;
      if (!isObject(op)) {
        fail(at, 'must be an Operation Object');
        continue;
      }
      if (op.operationId !== undefined) {
        if (typeof op.operationId !== 'string') fail(`${at}.operationId`, 'must be a string');
        else if (operationIds.has(op.operationId)) fail(`${at}.operationId`, `duplicate ${op.operationId}`);
        else operationIds.add(op.operationId);
      }
      const own = checkParameters(op.parameters, `${at}.parameters`);
      const pathParams = new Set([...shared, ...own].filter((p) => p.in === 'path').map((p) => p.name as string));
      for (const name of templated) if (!pathParams.has(name)) fail(at, `path parameter {${name}} is not declared`);
      for (const name of pathParams) if (!templated.includes(name)) fail(at, `path parameter ${name} is not in the path`);
      if (op.requestBody !== undefined) {
        const body = deref(op.requestBody);
        if (!isObject(body) || !isObject(body.content) || Object.keys(body.content).length === 0) fail(`${at}.requestBody`, 'content is required');
        else checkContent(body.content, `${at}.requestBody.content`);
      }
      if (op.security !== undefined) checkSecurity(op.security, `${at}.security`);
      if (!isObject(op.responses) || Object.keys(op.responses).length === 0) {
        fail(`${at}.responses`, 'at least one response');
        continue;
      }
      for (const [code, raw] of Object.entries(op.responses)) {
        const r = deref(raw);
        const rat = `${at}.responses.${code}`;
        if (!RESPONSE_CODE.test(code)) fail(rat, 'a status code, nXX or default');
        if (!isObject(r) || typeof r.description !== 'string') {
          fail(rat, 'description is required');
          continue;
        }
        if (r.content !== undefined) checkContent(r.content, `${rat}.content`);
        if (r.headers !== undefined && !isObject(r.headers)) fail(`${rat}.headers`, 'must be an object');
      }
    }
  }
  const tagNames = Array.isArray(doc.tags) ? doc.tags.map((t) => (isObject(t) ? t.name : undefined)) : [];
  if (new Set(tagNames).size !== tagNames.length) fail('$.tags', 'tag names must be unique');
  return problems;
}
