import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { z } from 'zod';
import { definePlugin, MessageFormatError, type KernelApi } from '../../../../sdk/plugin/index.ts';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';

/** The csv format through a real kernel: channels with data_format csv (requests, replies, OpenAPI) and message decoding. */

const SERVICES: Record<string, string> = {
  // Text passes the CSV writer untouched: the service answers JSON to show what it was given.
  'echo.ts': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => { ctx.response.contentType = 'application/json'; return JSON.stringify({ payload: ctx.payload ?? null, input: ctx.input }); } });`,
  'rows.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ctx.payload });`,
  'typed.ts': `import { service, t } from 'svc/sdk';
export default service({
  input: { batch: t.integer(), dry_run: t.boolean({ default: false }) },
  handle(ctx) {
    ctx.response.contentType = 'application/json';
    const rows = ctx.payload as Array<Record<string, string>>;
    return JSON.stringify({ batch: ctx.input.batch, dry_run: ctx.input.dry_run, total: rows.reduce((sum, r) => sum + Number(r.qty), 0) });
  },
});`,
  'export.ts': `import { service } from 'svc/sdk';
export default service({ handle: () => [{ name: 'Zoë', formula: '=HYPERLINK("http://evil","click")', amount: -5, note: '-5' }, { name: '@admin', formula: '+A1*2', amount: 3.5, note: 'a;b' }] });`,
  'bad.ts': `import { service } from 'svc/sdk';
export default service({ handle: (ctx) => ctx.input.kind === 'nested' ? [{ a: { b: 1 } }] : ctx.input.kind === 'euro' ? [{ price: '5 €' }] : 42 });`,
};

const CONFIG = `
channel_rest:
  - { name: echo, url_path: '/echo/{id}', service: echo, security: none, data_format: csv }
  - { name: rows, url_path: /rows, service: rows, security: none, data_format: csv }
  - { name: semi, url_path: /semi, service: rows, security: none, data_format: csv, csv: { delimiter: ';', header: false } }
  - { name: latin, url_path: /latin, service: rows, security: none, data_format: csv, csv: { encoding: latin1, delimiter: ';' } }
  - { name: cast, url_path: /cast, service: echo, security: none, data_format: csv, csv: { cast: true } }
  - { name: small, url_path: /small, service: rows, security: none, data_format: csv, body_limit: 64, csv: { max_rows: 2 } }
  - { name: typed, url_path: /typed, service: typed, security: none, data_format: csv }
  - { name: export, url_path: /export, service: export, security: none, data_format: csv, csv: { delimiter: ';' } }
  - { name: export.latin, url_path: /export/latin, service: export, security: none, data_format: csv, csv: { encoding: latin1 } }
  - { name: bad, url_path: '/bad/{kind}', service: bad, security: none, data_format: csv, csv: { encoding: latin1 } }
`;

let api!: KernelApi;
const probe = definePlugin({
  name: 'probe',
  kind: 'other',
  version: '1.0.0',
  sdk: '^1.8.0',
  configSchema: z.object({}).strict().default({}),
  setup(kernel) {
    api = kernel;
  },
  hooks: {},
});

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES, extraPlugins: [probe] });
  for (const name of Object.keys(SERVICES)) expect(k.kernel.services.errors.get(name.replace(/\.ts$/, '')), name).toBeUndefined();
}, 60_000);
afterAll(() => k?.close());

const post = (url: string, body: string | Buffer, contentType = 'text/csv') => k.app.inject({ method: 'POST', url, payload: body, headers: { 'content-type': contentType } });

function expectError(res: LightMyRequestResponse, status: number, details: RegExp): void {
  expect(res.statusCode).toBe(status);
  const json = res.json() as { result: string; cid: string; details: string };
  expect(json.result).toBe('Error');
  expect(json.cid).toBe(res.headers['x-svc-cid']);
  expect(json.details).toMatch(details);
}

describe('csv channels: requests', () => {
  it('gives the service the records as ctx.payload, keyed by the header; the URL stays ctx.input', async () => {
    const res = await post('/echo/7', 'id,name,zip\r\n1,Ann,007\r\n2,"Bob, Jr.",\r\n');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payload: [{ id: '1', name: 'Ann', zip: '007' }, { id: '2', name: 'Bob, Jr.', zip: '' }], input: { id: '7' } });
  });

  it('leaves the payload unset for an empty body', async () => {
    expect((await post('/echo/1', '')).json()).toEqual({ payload: null, input: { id: '1' } });
  });

  it('casts plain numbers only where the channel says cast: true', async () => {
    const res = await post('/cast', 'sku,qty,price\n007,2,-1.5\n');
    expect(res.json().payload).toEqual([{ sku: '007', qty: 2, price: -1.5 }]);
  });

  it('drops a BOM a spreadsheet export starts with', async () => {
    const res = await post('/echo/1', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('id,name\n1,Zoë\n')]));
    expect(res.json().payload).toEqual([{ id: '1', name: 'Zoë' }]);
  });

  it('reads ISO-8859-1 on a latin1 channel, or when the Content-Type says so, and answers in it', async () => {
    const latin1 = Buffer.from('name;city\nZoë;Düsseldorf\n', 'latin1');
    const res = await post('/latin', latin1);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=iso-8859-1');
    expect(res.rawPayload).toEqual(Buffer.from('name;city\r\nZoë;Düsseldorf\r\n', 'latin1'));
    const named = await post('/echo/1', Buffer.from('name\nZoë\n', 'latin1'), 'text/csv; charset=ISO-8859-1');
    expect(named.json().payload).toEqual([{ name: 'Zoë' }]);
  });

  it('checks a typed input model against the URL, the rows staying the payload', async () => {
    const res = await post('/typed?batch=17&dry_run=true', 'sku,qty\nA,2\nB,3\n');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ batch: 17, dry_run: true, total: 5 });
    expectError(await post('/typed?batch=seven', 'sku,qty\nA,2\n'), 400, /^Invalid input: field 'batch' must be an integer$/);
    expectError(await post('/typed', 'sku,qty\nA,2\n'), 400, /^Invalid input: missing required field 'batch'$/);
  });

  it.each<[string, string | Buffer, RegExp]>([
    ['an unclosed quote', 'id,name\n1,"Ann\n', /^Malformed CSV: Quote Not Closed: .*line 2/],
    ['an inconsistent column count', 'id,name\n1,Ann\n2,Bob,extra\n', /^Malformed CSV: Invalid Record Length: columns length is 2, got 3 on line 3/],
    ['a repeated column', 'id,id\n1,2\n', /^Malformed CSV: the header row names column "id" twice \(column 2\)$/],
    ['a __proto__ column', '__proto__\n{}\n', /^Malformed CSV: the header row names a forbidden column "__proto__"/],
    ['bytes that are not UTF-8', Buffer.from('name\nZoë\n', 'latin1'), /^Malformed CSV: the body is not valid UTF-8/],
  ])('answers 400 MALFORMED_BODY for %s', async (_label, body, details) => {
    expectError(await post('/rows', body), 400, details);
  });

  it('answers 400 for a charset it cannot read', async () => {
    expectError(await post('/rows', 'a\n1\n', 'text/csv; charset=utf-16'), 400, /^Malformed CSV: unsupported charset "utf-16"/);
  });

  it('answers 400 past max_rows and 413 past the body limit', async () => {
    expect((await post('/small', 'a\n1\n2\n')).statusCode).toBe(200);
    expectError(await post('/small', 'a\n1\n2\n3\n'), 400, /^Malformed CSV: line 4: more than 2 rows \(csv.max_rows\)$/);
    expect((await post('/small', `a\n${'1\n'.repeat(40)}`)).statusCode).toBe(413);
  });
});

describe('csv channels: replies', () => {
  it('round-trips: the records the service returns are written back as CSV', async () => {
    const csv = 'id,name,note\r\n1,Ann,"a,b"\r\n2,"Bob ""B"" Jr.","two\nlines"\r\n';
    const res = await post('/rows', csv);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.body).toBe(csv);
    const semi = await post('/semi', 'a;b\n1;"2;3"\n');
    expect(semi.body).toBe('a;b\r\n1;"2;3"\r\n');
  });

  it('neutralises formula cells in what a service exports, numbers left alone', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/export' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(`name;formula;amount;note\r\nZoë;"'=HYPERLINK(""http://evil"",""click"")";-5;-5\r\n'@admin;'+A1*2;3.5;"a;b"\r\n`);
  });

  it('answers 500 with the reason for output that has no CSV form', async () => {
    expectError(await k.app.inject({ method: 'GET', url: '/bad/number' }), 500, /^Service output cannot be written as CSV: a number is not a list of rows/);
    expectError(await k.app.inject({ method: 'GET', url: '/bad/nested' }), 500, /^Service output cannot be written as CSV: row 1, column "a": a nested value/);
  });

  it('answers in UTF-8, saying so, what a latin1 channel cannot carry', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/bad/euro' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.body).toContain('€');
  });

  it('describes the csv body in the channels’ OpenAPI document', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/svc/channels/openapi.json' });
    expect(res.statusCode).toBe(200);
    const op = (res.json() as Record<string, any>).paths['/rows'].post;
    expect(Object.keys(op.requestBody.content)).toEqual(['text/csv']);
    expect(op.requestBody.content['text/csv'].schema.type).toBe('string');
    expect(Object.keys(op.responses['200'].content)).toEqual(['text/csv']);
  });
});

describe('csv messages (KernelApi.decodeMessage)', () => {
  it('decodes a message with the source’s csv settings', () => {
    expect(api.decodeMessage('csv', Buffer.from('id,qty\n1,2\n'))).toEqual({ payload: [{ id: '1', qty: '2' }], textFields: true });
    const settings = { delimiter: ';', header: false, cast: true };
    expect(api.decodeMessage('csv', Buffer.from('1;2\n3;x\n'), settings).payload).toEqual([[1, 2], [3, 'x']]);
    // The same settings object again: the reader built for it is reused.
    expect(api.decodeMessage('csv', Buffer.from('5;6\n'), settings).payload).toEqual([[5, 6]]);
    expect(api.decodeMessage('csv', Buffer.from('name\nZoë\n', 'latin1'), { encoding: 'latin1' }).payload).toEqual([{ name: 'Zoë' }]);
  });

  it('refuses a malformed message with a MessageFormatError naming the line, and past a cap', () => {
    expect(() => api.decodeMessage('csv', Buffer.from('a,b\n1,"2\n'))).toThrow(MessageFormatError);
    expect(() => api.decodeMessage('csv', Buffer.from('a,b\n1,"2\n'))).toThrow(/^Malformed CSV: Quote Not Closed: .*line 2/);
    expect(() => api.decodeMessage('csv', Buffer.from('a\n1\n2\n'), { max_rows: 1 })).toThrow(/^Malformed CSV: line 3: more than 1 rows/);
    expect(() => api.decodeMessage('csv', Buffer.from([0xff, 0x0a]))).toThrow(/not valid UTF-8/);
  });

  it('refuses settings that are not csv settings', () => {
    expect(() => api.decodeMessage('csv', Buffer.from('a\n'), { delimiter: ';;' })).toThrow();
  });
});
