import type { KernelApi } from '../../../sdk/plugin/index.ts';
import { jsonSchemaOf, type Json, type ResourceSection } from './catalogue.ts';
import { listOps } from './ops.ts';
import type { Principal } from './roles.ts';
import { auditQuerySchema, importSchema, loginReplySchema, loginSchema, newKeySchema, newUserSchema } from './schema.ts';

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const jsonBody = (schema: unknown, description: string) => ({ description, content: { 'application/json': { schema } } });
const ERR = jsonBody(ref('Error'), 'Error');
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), ERR]));
const AUTHED = errors(401, 403);
const nameParam = { name: 'name', in: 'path', required: true, description: 'The entry name (percent-encode `/`).', schema: { type: 'string' } };

/** The admin API's OpenAPI 3.1 document, from the same zod schemas that validate config and requests. */
export function adminOpenApi(kernel: KernelApi, sections: readonly ResourceSection[], version: string, p?: Principal): Json {
  const schemas: Record<string, unknown> = {
    Error: {
      type: 'object',
      required: ['result', 'cid', 'details'],
      properties: {
        result: { const: 'Error' },
        cid: { type: 'string', description: 'Correlation ID, also in the X-Svc-CID header.' },
        details: { type: 'string' },
        issues: { type: 'array', items: ref('Issue') },
      },
    },
    Issue: {
      type: 'object',
      required: ['path', 'message'],
      properties: {
        path: { type: 'array', items: { type: ['string', 'integer'] }, description: 'Path in the whole config (or in the request body).' },
        message: { type: 'string' },
        section: { type: 'string', description: 'The resource section the issue falls in.' },
        name: { type: 'string', description: 'The resource it falls in.' },
        field: { type: 'array', items: { type: ['string', 'integer'] }, description: 'Path inside that resource.' },
      },
    },
    Login: jsonSchemaOf(loginSchema),
    LoginReply: jsonSchemaOf(loginReplySchema, 'output'),
    Import: jsonSchemaOf(importSchema),
    NewUser: jsonSchemaOf(newUserSchema),
    NewKey: jsonSchemaOf(newKeySchema),
  };
  const accountName = { name: 'name', in: 'path', required: true, description: "The account's or key's name (a tenant's `<tenant>/<name>`; percent-encode `/`).", schema: { type: 'string' } };
  const paths: Record<string, unknown> = {
    '/admin/api/login': { post: { tags: ['session'], summary: 'Log in: sets the session cookie, returns the CSRF token', security: [], requestBody: jsonBody(ref('Login'), 'Credentials'), responses: { 200: jsonBody(ref('LoginReply'), 'Logged in'), ...errors(400, 401, 429) } } },
    '/admin/api/logout': { post: { tags: ['session'], summary: 'Ends the session', responses: { 204: { description: 'Logged out' }, ...AUTHED } } },
    '/admin/api/session': { get: { tags: ['session'], summary: 'The current session and its CSRF token', responses: { 200: jsonBody(ref('LoginReply'), 'Session'), ...AUTHED } } },
    '/admin/api/resources': { get: { tags: ['resources'], summary: 'The resource sections with the JSON Schema of their entries', responses: { 200: jsonBody({ type: 'object' }, 'Catalogue'), ...AUTHED } } },
    '/admin/api/overrides': { get: { tags: ['resources'], summary: 'Admin edits in force over the config file', responses: { 200: jsonBody({ type: 'object' }, 'Overrides'), ...AUTHED } } },
    '/admin/api/overrides/{section}/{name}': {
      delete: {
        tags: ['resources'],
        summary: "Removes an admin edit: the config file's version (or none) applies again",
        parameters: [{ name: 'section', in: 'path', required: true, schema: { type: 'string' } }, nameParam],
        responses: { 204: { description: 'Removed' }, ...errors(400, 401, 403, 404) },
      },
    },
    '/admin/api/ops': { get: { tags: ['ops'], summary: 'Control ops of the running server, with the JSON Schema of their arguments', responses: { 200: jsonBody({ type: 'object' }, 'Ops'), ...AUTHED } } },
    '/admin/api/audit': {
      get: {
        tags: ['audit'],
        summary: 'Audit rows, newest first (who, what, when; never secret values)',
        parameters: Object.entries((jsonSchemaOf(auditQuerySchema).properties ?? {}) as Record<string, Json>).map(([name, schema]) => ({ name, in: 'query', schema, description: schema.description })),
        responses: { 200: jsonBody({ type: 'object' }, 'Rows'), ...AUTHED },
      },
    },
    '/admin/api/usage': { get: { tags: ['tenants'], summary: 'Per tenant: calls, errors, throttled calls and CPU against its quota (a tenant\'s administrators: their tenant)', responses: { 200: jsonBody({ type: 'object' }, 'Usage'), ...AUTHED } } },
    '/admin/api/users': {
      get: { tags: ['accounts'], summary: "Accounts with role and tenant (a tenant owner: its tenant's)", responses: { 200: jsonBody({ type: 'object' }, 'Accounts'), ...AUTHED } },
      post: { tags: ['accounts'], summary: 'Creates an account (a tenant owner: in its tenant, with a tenant role)', requestBody: jsonBody(ref('NewUser'), 'The account'), responses: { 201: jsonBody({ type: 'object' }, 'Created'), ...errors(400, 401, 403, 404, 409) } },
    },
    '/admin/api/users/{name}': { delete: { tags: ['accounts'], summary: 'Deletes an account and ends its sessions', parameters: [accountName], responses: { 204: { description: 'Deleted' }, ...errors(401, 403, 404, 409) } } },
    '/admin/api/keys': {
      get: { tags: ['accounts'], summary: "API keys with role and tenant (a tenant owner: its tenant's)", responses: { 200: jsonBody({ type: 'object' }, 'Keys'), ...AUTHED } },
      post: { tags: ['accounts'], summary: 'Creates an API key; the key is in this answer only', requestBody: jsonBody(ref('NewKey'), 'The key'), responses: { 201: jsonBody({ type: 'object' }, 'Created, with `key`'), ...errors(400, 401, 403, 404, 409) } },
    },
    '/admin/api/keys/{name}': { delete: { tags: ['accounts'], summary: 'Revokes an API key at once', parameters: [accountName], responses: { 204: { description: 'Deleted' }, ...errors(401, 403, 404) } } },
    '/admin/api/export': { get: { tags: ['transfer'], summary: 'The running config as YAML (secrets as ${VARIABLE} references)', responses: { 200: { description: 'YAML', content: { 'application/yaml': { schema: { type: 'string' } } } }, ...AUTHED } } },
    '/admin/api/import': { post: { tags: ['transfer'], summary: 'Creates or replaces entries of several sections, checked whole: all or nothing', requestBody: jsonBody(ref('Import'), 'Sections'), responses: { 200: jsonBody({ type: 'object' }, 'Imported'), ...errors(400, 401, 403) } } },
    '/admin/api/openapi.json': { get: { tags: ['transfer'], summary: 'This document', responses: { 200: jsonBody({ type: 'object' }, 'OpenAPI 3.1') } } },
    '/admin/api/spec/openapi.json': { get: { tags: ['transfer'], summary: 'The interface specification: the channels and plugin routes clients call', responses: { 200: jsonBody({ type: 'object' }, 'OpenAPI 3.1'), ...AUTHED } } },
    '/admin/api/spec/channels.json': { get: { tags: ['transfer'], summary: 'The channels alone (with the channels-openapi plugin enabled)', responses: { 200: jsonBody({ type: 'object' }, 'OpenAPI 3.1'), ...errors(401, 403, 404) } } },
  };
  for (const s of sections) {
    const entry = `${s.name}.entry`;
    schemas[entry] = { ...s.schema, description: `${s.description} Write-only keys (never returned): ${s.writeOnly.join(', ') || 'none'}.` };
    schemas[`${s.name}.view`] = {
      type: 'object',
      required: ['name', 'source', 'entry', 'secretsSet'],
      properties: {
        name: { type: 'string' },
        source: { enum: ['file', 'admin', 'tenant_config'], description: "The config file, an admin edit over it, or a tenant's own config (read only here)." },
        origin: { type: 'string', description: "A tenant_config entry's place: tenants[acme].config_file (tenants/acme.yaml).cache[0]." },
        entry: ref(entry),
        secretsSet: { type: 'array', items: { type: 'string' } },
      },
    };
    const view = ref(`${s.name}.view`);
    paths[`/admin/api/resources/${s.name}`] = {
      get: { tags: [s.name], summary: `Lists ${s.name}`, responses: { 200: jsonBody({ type: 'object', properties: { items: { type: 'array', items: view } } }, 'Entries'), ...AUTHED } },
      post: { tags: [s.name], summary: `Creates a ${s.name} entry (applied at once)`, requestBody: jsonBody(ref(entry), 'The entry'), responses: { 201: jsonBody(view, 'Created'), ...errors(400, 401, 403, 409) } },
    };
    paths[`/admin/api/resources/${s.name}/{name}`] = {
      parameters: [nameParam],
      get: { tags: [s.name], summary: `One ${s.name} entry`, responses: { 200: jsonBody(view, 'The entry'), ...errors(401, 404) } },
      put: { tags: [s.name], summary: `Creates or replaces a ${s.name} entry; write-only keys left out keep their value, null clears one`, requestBody: jsonBody(ref(entry), 'The entry'), responses: { 200: jsonBody(view, 'Replaced'), 201: jsonBody(view, 'Created'), ...errors(400, 401, 403, 409) } },
      delete: { tags: [s.name], summary: `Deletes a ${s.name} entry (one from the config file stays deleted while the override exists)`, responses: { 204: { description: 'Deleted' }, ...errors(400, 401, 403, 404, 409) } },
    };
  }
  for (const op of listOps(kernel, p)) {
    schemas[`op.${op.op}`] = op.args;
    paths[`/admin/api/ops/${op.op}`] = { post: { tags: ['ops'], summary: `Runs control op ${op.op}`, requestBody: jsonBody(ref(`op.${op.op}`), 'Arguments'), responses: { 200: jsonBody({ type: 'object', properties: { result: {} } }, 'Its result'), ...errors(400, 401, 403, 404) } } };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'svc admin API',
      version,
      description:
        'Config resources (every named-entry section of the config), control ops, audit, export and import. Changes are checked with the same schemas as the config file, persisted, applied at once and audited. ' +
        'Authenticate with the session cookie from POST /admin/api/login (then send X-CSRF-Token with every change) or with `Authorization: Bearer <API key>` (svc admin create-key). ' +
        'Errors are `{result: "Error", cid, details, issues?}`; every response carries X-Svc-CID.',
    },
    security: [{ session: [] }, { bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        session: { type: 'apiKey', in: 'cookie', name: 'svc_admin_session', description: 'From POST /admin/api/login; changes also need the X-CSRF-Token header.' },
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key made with `svc admin create-key NAME`.' },
      },
    },
  };
}
