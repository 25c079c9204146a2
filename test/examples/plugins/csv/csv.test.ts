import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { exampleDir, projectWithPackages } from '../../support.ts';

/** Echoes what the CSV plugin gave the service, or returns rows from the input. */
const SERVICES = {
  // Text passes the CSV writer untouched: the service answers JSON to show what it was given.
  'echo.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => { ctx.response.contentType = 'application/json'; return JSON.stringify({ payload: ctx.payload ?? null, input: ctx.input }); } });\n`,
  'rows.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ctx.payload });\n`,
  'made.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => [{ id: 1, name: 'Ann "the" first', note: 'a,b' }, { id: 2, name: ' padded ', extra: true }, { id: 3, note: 'line\\nbreak' }] });\n`,
  'nested.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: () => [{ id: 1, tags: ['a'] }] });\n`,
};

const CHANNELS = `
channel_rest:
  - { name: echo, url_path: "/echo/{id}", service: echo, security: none, data_format: csv }
  - { name: round, url_path: /round, service: rows, security: none, data_format: csv }
  - { name: semi, url_path: /semi, service: rows, security: none, data_format: csv, csv: { delimiter: ";", columns: false } }
  - { name: made, url_path: /made, service: made, security: none, data_format: csv }
  - { name: nested, url_path: /nested, service: nested, security: none, data_format: csv }
`;

const post = (k: TestKernel, url: string, payload: string) => k.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'text/csv' } });

describe('csv example plugin, loaded by a relative path', () => {
  let k: TestKernel;
  beforeAll(async () => {
    // The config file lives in <temp>/config/; the module path is relative to that directory.
    const dir = mkdtempSync(join(tmpdir(), 'svc-csv-'));
    const module = relative(join(dir, 'config'), join(exampleDir('csv'), 'plugin.ts'));
    k = await startKernel({ dir, config: `plugins:\n  csv: { module: ${JSON.stringify(module.startsWith('.') ? module : `./${module}`)} }\n${CHANNELS}`, services: SERVICES });
  });
  afterAll(async () => {
    await k?.close();
    if (k) rmSync(k.dir, { recursive: true, force: true });
  });

  it('gives the service the rows as ctx.payload, header names as keys; the URL stays in ctx.input', async () => {
    const res = await post(k, '/echo/7', 'id,name\r\n1,Ann\r\n2,"Bob, Jr."\r\n');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ payload: [{ id: '1', name: 'Ann' }, { id: '2', name: 'Bob, Jr.' }], input: { id: '7' } });
  });

  it('round-trips: CSV in, rows to the service, the same rows back as CSV', async () => {
    const csv = 'id,name,note\r\n1,Ann,"a,b"\r\n2,"Bob ""B"" Jr.","two\nlines"\r\n';
    const res = await post(k, '/round', csv);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.body).toBe(csv);
  });

  it('reads and writes with the channel’s delimiter; columns: false keeps rows as arrays', async () => {
    const res = await post(k, '/semi', 'a;b\n1;"2;3"\n');
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('a;b\r\n1;"2;3"\r\n');
  });

  it('writes objects with a header of every key, quoting where needed', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/made' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('id,name,note,extra\r\n1,"Ann ""the"" first","a,b",\r\n2," padded ",,true\r\n3,,"line\nbreak",\r\n');
  });

  it.each<[string, string, RegExp]>([
    ['an unclosed quote', 'id,name\n1,"Ann\n', /^Malformed CSV: Quote Not Closed/],
    ['a row longer than the header', 'id,name\n1,Ann,extra\n', /^Malformed CSV: Invalid Record Length/],
    ['a repeated column name', 'id,id\n1,2\n', /^Malformed CSV: the header row names column 'id' twice$/],
    ['a __proto__ column', '__proto__,b\n1,2\n', /forbidden column '__proto__'/],
    ['bytes that are not UTF-8', '\xff\xfe,a\n', /^Malformed CSV: the body is not UTF-8 text$/],
  ])('answers 400 MALFORMED_BODY for %s', async (_label, body, details) => {
    const res = await k.app.inject({ method: 'POST', url: '/round', payload: Buffer.from(body, 'latin1'), headers: { 'content-type': 'text/csv' } });
    expect(res.statusCode).toBe(400);
    const json = res.json() as { result: string; cid: string; details: string };
    expect(json.result).toBe('Error');
    expect(json.cid).toBe(res.headers['x-svc-cid']);
    expect(json.details).toMatch(details);
  });

  it('answers 500 when the service returns rows with nested values', async () => {
    const res = await k.app.inject({ method: 'GET', url: '/nested' });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toMatchObject({ result: 'Error', details: expect.stringMatching(/cannot be written as CSV: row 1, column 'tags'/) });
  });
});

describe('csv example plugin, loaded by package name', () => {
  let k: TestKernel;
  beforeAll(async () => {
    k = await startKernel({ dir: projectWithPackages(['csv']), config: `plugins:\n  csv: { module: svc-plugin-csv }\n${CHANNELS}`, services: SERVICES });
  });
  afterAll(async () => {
    await k?.close();
    if (k) rmSync(k.dir, { recursive: true, force: true });
  });

  it('round-trips CSV', async () => {
    const res = await post(k, '/round', 'a,b\r\n1,2\r\n');
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('a,b\r\n1,2\r\n');
  });
});
