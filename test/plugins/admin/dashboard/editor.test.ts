import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: the Dashboard's own script, plain JavaScript without types.
import { completionsAt, tokens } from '../../../../plugins/admin/dashboard/assets/editor.js';
import { readSdkTypes, sdkTypesOf, type SdkTypes } from '../../../../plugins/admin/dashboard/sdk-types.ts';
import type { Context, Log } from '../../../../sdk/context.ts';
import { startAdmin, type AdminKernel } from '../api/support.ts';

/**
 * The service editor's parts that are not drawing: the TypeScript colouring (editor.js) and the
 * completions after `ctx.`, read from the SDK's source (sdk-types.ts). The walk in Chromium
 * (walk.test.ts) uses both on a page.
 */

// Every member of the SDK's Context and Log, by the compiler: a member added to either fails the
// type check of this file until it is listed here, and then the parser must find it.
const CONTEXT_MEMBERS: Record<keyof Context, true> = {
  cid: true,
  channel: true,
  method: true,
  path: true,
  input: true,
  payload: true,
  query: true,
  pathParams: true,
  headers: true,
  env: true,
  rawBody: true,
  rawBytes: true,
  files: true,
  user: true,
  delivery: true,
  response: true,
  log: true,
};
const LOG_MEMBERS: Record<keyof Log, true> = { debug: true, info: true, warn: true, error: true };

describe("the editor's completions from the SDK", () => {
  const types = readSdkTypes();

  it("offers every member of Context, each with its type and doc comment, and the members of the SDK's interfaces they are", () => {
    expect(types.ctx.map((m) => m.name).sort()).toEqual(Object.keys(CONTEXT_MEMBERS).sort());
    expect(types.ctx.find((m) => m.name === 'cid')).toEqual({ name: 'cid', type: 'string', doc: 'Correlation ID of the request; also in the X-Svc-CID response header.' });
    expect(types.ctx.find((m) => m.name === 'rawBytes')).toMatchObject({ type: '(): Uint8Array', doc: 'The raw body bytes, exactly as received.' });
    expect(types.ctx.find((m) => m.name === 'log')).toMatchObject({ of: 'Log' });
    expect(types.ctx.find((m) => m.name === 'user')).toMatchObject({ type: 'User | undefined', of: 'User' });
    // A list of files is not a file: no members after `ctx.files.`.
    expect(types.ctx.find((m) => m.name === 'files')!.of).toBeUndefined();
    expect(types.types.Log!.map((m) => m.name)).toEqual(Object.keys(LOG_MEMBERS));
    expect(types.types.User!.map((m) => m.name)).toEqual(['username', 'definition', 'type', 'group']);
    expect(types.types.User!.find((m) => m.name === 'group')!.type).toBe('string | undefined');
  });

  it('reads members after their doc comments, one per line, and nothing nested in a member', () => {
    const parsed = sdkTypesOf(`export interface Log { info(m: string): void; }
export interface Context<I = Record<string, unknown>> {
  /**
   * Two lines
   * of doc.
   */
  readonly a: string;
  b?: { inner: number; other: string };
  readonly log: Log;
}`);
    expect(parsed.ctx).toEqual([
      { name: 'a', type: 'string', doc: 'Two lines of doc.' },
      { name: 'b', type: '{ inner: number; other: string } | undefined', doc: '' },
      { name: 'log', type: 'Log', doc: '', of: 'Log' },
    ]);
    expect(() => sdkTypesOf('export interface Other {}')).toThrow('declares no Context interface');
  });

  it('chooses what to offer from the text before the caret', () => {
    const at = (before: string) => completionsAt(before, types) as { prefix: string; members: Array<{ name: string }> } | undefined;
    expect(at('  ctx.')!.members).toHaveLength(Object.keys(CONTEXT_MEMBERS).length);
    expect(at('  ctx.pa')).toMatchObject({ prefix: 'pa', members: [{ name: 'path' }, { name: 'payload' }, { name: 'pathParams' }] });
    expect(at('ctx.log.w')).toMatchObject({ prefix: 'w', members: [{ name: 'warn' }] });
    // Nothing to offer: another name, no member with that prefix, a member that is no SDK interface.
    expect(at('req.')).toBeUndefined();
    expect(at('ctx.zz')).toBeUndefined();
    expect(at('ctx.cid.')).toBeUndefined();
    expect(at('myctx.')).toBeUndefined();
  });
});

describe('the TypeScript colouring', () => {
  const join_ = (src: string) => (tokens(src) as Array<[string, string]>).map(([, t]) => t).join('');
  const kinds = (src: string) => (tokens(src) as Array<[string, string]>).filter(([k]) => k).map(([k, t]) => `${k}:${t}`);

  it('loses no character of any service shipped in services/', () => {
    const dir = join(import.meta.dirname, '../../../../services');
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(join(dir, file), 'utf8');
      expect(join_(source), file).toBe(source);
    }
  });

  it('marks keywords, strings, template strings, comments, numbers and type names', () => {
    expect(kinds("const a = 'x'; // note\nreturn `t ${1}` + 2.5 as Order;")).toEqual(["kw:const", "str:'x'", 'com:// note', 'kw:return', 'str:`t ${1}`', 'num:2.5', 'kw:as', 'type:Order']);
    expect(kinds('/* a\nb */ x')).toEqual(['com:/* a\nb */']);
    // Unfinished strings and comments run to where they would (the line, the text): typing stays coloured.
    expect(kinds("'open\nnext")).toEqual(["str:'open"]);
    expect(kinds('/* open')).toEqual(['com:/* open']);
  });
});

describe('the completions as the Dashboard serves them', () => {
  let k: AdminKernel;
  beforeAll(async () => {
    k = await startAdmin();
  });
  afterAll(() => k?.close());

  it('are at /admin/sdk-types.json, the SDK read when the server started', async () => {
    const res = await fetch(`${k.admin}/admin/sdk-types.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect((await res.json()) as SdkTypes).toEqual(JSON.parse(JSON.stringify(readSdkTypes())));
  });
});
