import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { openApiProblems } from '../../../helpers/openapi.ts';

/**
 * The channels' OpenAPI document (issue 15), generated from a real kernel: its config, and the
 * typed input models the sandbox reported when the services deployed.
 */

const ORDERS = `import { service, t } from 'svc/sdk';
export default service({
  input: {
    id: t.integer({ description: 'Order number' }),
    status: t.string({ default: 'open', description: 'Which orders to list' }),
    limit: t.integer({ optional: true }),
    note: t.any({ optional: true }),
  },
  GET: (ctx) => ({ id: ctx.input.id, status: ctx.input.status }),
  POST: (ctx) => ({ id: ctx.input.id }),
});
`;
const UNTYPED = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ got: ctx.input }) });\n`;
const ADT = `import { service, t } from 'svc/sdk';\nexport default service({ input: { 'PID.3': t.string() }, handle: () => 'ok' });\n`;

const CONFIG = `
security:
  - { name: partners, type: basic_auth, username: partner, password: partner-password-1 }
  - { name: robots, type: apikey, key: 'robots-key-0123456789abcdef' }
  - name: limited
    type: basic_auth
    username: lim
    password: limited-password-1
    rate_limiting: [{ time_range: [{ is_all_day: true, limit: 5, limit_unit: minute }] }]
groups:
  - { name: clients, members: [partners, robots] }
channel_rest:
  - { name: orders, url_path: '/orders/{id}', service: orders, security: partners }
  - { name: orders.form, url_path: '/forms/orders/{id}', service: orders, method: POST, security: robots, data_format: form }
  - { name: orders.xml, url_path: '/xml/orders/{id}', service: orders, method: POST, security: clients, data_format: xml }
  - { name: loose, url_path: /loose, service: untyped, security: none }
  - { name: queued, url_path: /queued, service: untyped, method: POST, security: limited, use_queue: true }
  - { name: adt, url_path: /hl7/adt, service: adt, method: POST, security: none, data_format: hl7 }
  - { name: raw, url_path: /raw, service: untyped, method: PUT, security: none, data_format: none }
`;

type Json = Record<string, any>;

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: { 'orders.ts': ORDERS, 'untyped.ts': UNTYPED, 'adt.ts': ADT } });
}, 60_000);
afterAll(async () => {
  await k?.close();
});

async function served(): Promise<Json> {
  const res = await k.app.inject({ method: 'GET', url: '/svc/channels/openapi.json' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['x-svc-cid']).toBeTruthy();
  return res.json() as Json;
}

const param = (op: Json, name: string) => (op.parameters as Json[]).find((p) => p.name === name);

describe('the channels OpenAPI document', () => {
  it('is served beside the pub/sub one without credentials, and is a valid OpenAPI 3.1 document', async () => {
    const doc = await served();
    expect(doc.openapi).toBe('3.1.0');
    expect(openApiProblems(doc)).toEqual([]);
    expect(Object.keys(doc.paths).sort()).toEqual(['/forms/orders/{id}', '/hl7/adt', '/loose', '/orders/{id}', '/queued', '/raw', '/xml/orders/{id}']);
    // The pub/sub document is still its own.
    const pubsub = (await k.app.inject({ method: 'GET', url: '/svc/pubsub/openapi.json' })).json() as Json;
    expect(Object.keys(pubsub.paths).some((p) => p.startsWith('/orders'))).toBe(false);
  });

  it("lists a channel's methods: the channel's one, the service's verb handlers, or all", async () => {
    const doc = await served();
    expect(Object.keys(doc.paths['/orders/{id}']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/forms/orders/{id}'])).toEqual(['post']);
    expect(Object.keys(doc.paths['/loose']).sort()).toEqual(['delete', 'get', 'head', 'options', 'patch', 'post', 'put']);
  });

  it('takes path, query and body parameters from the typed input model', async () => {
    const doc = await served();
    const get = doc.paths['/orders/{id}'].get;
    expect(param(get, 'id')).toEqual({ name: 'id', in: 'path', required: true, schema: { type: 'integer' }, description: 'Order number' });
    expect(param(get, 'status')).toEqual({ name: 'status', in: 'query', required: false, schema: { type: 'string', default: 'open' }, description: 'Which orders to list' });
    expect(param(get, 'limit')).toEqual({ name: 'limit', in: 'query', required: false, schema: { type: 'integer' } });
    expect(param(get, 'note')).toEqual({ name: 'note', in: 'query', required: false, schema: {} });
    expect(get.requestBody).toBeUndefined();

    // POST carries the fields in a JSON body; the path parameter stays in the path.
    const post = doc.paths['/orders/{id}'].post;
    expect(post.parameters.map((p: Json) => p.name)).toEqual(['id']);
    const ref = post.requestBody.content['application/json'].schema.$ref as string;
    const body = doc.components.schemas[ref.replace('#/components/schemas/', '')];
    expect(body.type).toBe('object');
    expect(body.properties).toEqual({ status: { type: 'string', default: 'open', description: 'Which orders to list' }, limit: { type: 'integer' }, note: {} });
    expect(body.required).toBeUndefined();

    // Form and XML bodies carry the same fields, under their media types.
    expect(Object.keys(doc.paths['/forms/orders/{id}'].post.requestBody.content)).toEqual(['application/x-www-form-urlencoded']);
    const formRef = doc.paths['/forms/orders/{id}'].post.requestBody.content['application/x-www-form-urlencoded'].schema.$ref as string;
    expect(doc.components.schemas[formRef.replace('#/components/schemas/', '')]).toEqual(body);
    expect(doc.paths['/forms/orders/{id}'].post.requestBody.description).toMatch(/text, converted to the declared types/);
    expect(Object.keys(doc.paths['/xml/orders/{id}'].post.requestBody.content)).toEqual(['application/xml']);
    // HL7: the body is the message; its fields are named, not made query parameters.
    const adt = doc.paths['/hl7/adt'].post;
    expect(adt.requestBody.content['x-application/hl7-v2+er7'].schema.type).toBe('string');
    expect(adt.requestBody.description).toContain('PID.3 (string, required)');
    expect(adt.parameters).toBeUndefined();
    // A format that reads no fields: any bytes.
    expect(doc.paths['/raw'].put.requestBody.content).toEqual({ '*/*': { schema: {} } });
  });

  it('describes each security definition as a scheme, and a group as its members, any one of them', async () => {
    const doc = await served();
    expect(doc.components.securitySchemes.partners).toMatchObject({ type: 'http', scheme: 'basic' });
    expect(doc.components.securitySchemes.robots).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    expect(doc.paths['/orders/{id}'].get.security).toEqual([{ partners: [] }]);
    expect(doc.paths['/forms/orders/{id}'].post.security).toEqual([{ robots: [] }]);
    expect(doc.paths['/xml/orders/{id}'].post.security).toEqual([{ partners: [] }, { robots: [] }]);
    expect(doc.paths['/loose'].get.security).toEqual([]);
    expect(doc.paths['/loose'].get.responses['401'].description).not.toContain('credentials');
    expect(doc.paths['/orders/{id}'].get.responses['401'].description).toContain('missing or wrong credentials');
  });

  it('lists the error answers with the CID body, and the X-Svc-CID header on every response', async () => {
    const doc = await served();
    expect(doc.components.headers['X-Svc-CID'].schema).toEqual({ type: 'string' });
    expect(doc.components.schemas.ChannelError).toMatchObject({ required: ['result', 'cid', 'details'], properties: { result: { const: 'Error' } } });
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        for (const [status, response] of Object.entries((op as Json).responses as Json)) {
          expect((response as Json).headers?.['X-Svc-CID'], `${method} ${path} ${status}`).toEqual({ $ref: '#/components/headers/X-Svc-CID' });
          if (status === 'default' || Number(status) >= 400) expect((response as Json).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ChannelError' });
        }
      }
    }
    const post = doc.paths['/orders/{id}'].post.responses;
    expect(Object.keys(post)).toEqual(['200', '400', '401', '413', '500', '503', 'default']);
    expect(post['400'].description).toContain('INVALID_INPUT');
    expect(post['413'].description).toContain('1048576 bytes');
    expect(post['503'].description).toContain('SHUTTING_DOWN');
    // What plugins add: the queue's answer and QUEUE_FULL, the rate limit's 429, multipart's 415 (not here).
    const queued = doc.paths['/queued'].post.responses;
    expect(queued['200'].content['application/json'].schema.required).toEqual(['cid']);
    expect(queued['503'].description).toContain('QUEUE_FULL');
    expect(queued['429'].description).toContain('TOO_MANY_REQUESTS');
    expect(queued.default).toBeUndefined();
    expect(doc.paths['/orders/{id}'].get.responses['429']).toBeUndefined();
  });

  it('documents what the channel really answers: a request missing a required field gets the 400 error body', async () => {
    const doc = await served();
    const res = await k.app.inject({ method: 'GET', url: '/orders/x', headers: { authorization: 'Basic ' + Buffer.from('partner:partner-password-1').toString('base64') } });
    expect(res.statusCode).toBe(400);
    const body = res.json() as Json;
    expect(Object.keys(body).sort()).toEqual([...doc.components.schemas.ChannelError.required].sort());
    expect(body.cid).toBe(res.headers['x-svc-cid']);
    expect(doc.paths['/orders/{id}'].get.responses['400']).toBeDefined();
  });

  it('regenerates after a hot deploy and after a config change', async () => {
    const before = await served();
    await k.writeService('untyped.ts', `import { service, t } from 'svc/sdk';\nexport default service({ input: { q: t.string({ description: 'Search text' }) }, handle: () => ({}) });\n`);
    const deployed = await served();
    expect(deployed.info.version).not.toBe(before.info.version);
    expect(param(deployed.paths['/loose'].get, 'q')).toEqual({ name: 'q', in: 'query', required: true, schema: { type: 'string' }, description: 'Search text' });
    expect(await k.writeConfig(CONFIG + "  - { name: added, url_path: '/added/{x}', service: untyped, method: GET, security: none }\n")).toBe(true);
    const changed = await served();
    expect(param(changed.paths['/added/{x}'].get, 'x')).toMatchObject({ in: 'path', required: true, schema: { type: 'string' } });
    expect(openApiProblems(changed)).toEqual([]);
    // Nothing changed: the same document (and version) again.
    expect((await served()).info.version).toBe(changed.info.version);
  });

  it('is a control op too (the CLI and the admin API use it)', async () => {
    const doc = (await k.kernel.runControl('openapi.channels', {})) as Json;
    expect(doc).toEqual(await served());
  });
});

describe('the OpenAPI checks', () => {
  it('find what breaks a document', () => {
    const bad = {
      openapi: '3.0.3',
      info: { title: 't' },
      paths: {
        '/a/{id}': {
          get: { operationId: 'x', parameters: [{ name: 'id', in: 'path', schema: { type: 'int' } }], security: [{ nope: [] }], responses: { 200: {} } },
          post: { operationId: 'x', requestBody: { content: {} }, responses: { 600: { description: 'no', content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } } } } },
        },
      },
    };
    const problems = openApiProblems(bad).join('\n');
    for (const expected of ['must be 3.1.x', 'info.version', 'must be required: true', 'unknown JSON type int', 'names no declared security scheme: nope', 'description is required', 'duplicate x', 'content is required', 'a status code', 'does not resolve', 'path parameter {id} is not declared'])
      expect(problems).toContain(expected);
  });

  it('pass the pub/sub document', async () => {
    expect(openApiProblems((await k.app.inject({ method: 'GET', url: '/svc/pubsub/openapi.json' })).json())).toEqual([]);
  });
});

describe('with channel_listener: false', () => {
  it('is not served on the channel listener, but the control op still gives it', async () => {
    const off = await startKernel({ config: `plugins:\n  channels-openapi: { config: { channel_listener: false } }\nchannel_rest:\n  - { name: hello, url_path: /hello, service: untyped, security: none }\n`, services: { 'untyped.ts': UNTYPED } });
    try {
      expect((await off.app.inject({ method: 'GET', url: '/svc/channels/openapi.json' })).statusCode).toBe(404);
      expect(Object.keys(((await off.kernel.runControl('openapi.channels', {})) as Json).paths)).toEqual(['/hello']);
    } finally {
      await off.close();
    }
  }, 60_000);
});
