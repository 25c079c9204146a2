import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies on a json channel with an echo service in the sandbox: never a 5xx. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none }
`;
const SERVICES = { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ payload: ctx.payload ?? null }) });` };

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

const contentType = fc.option(fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1', 'multipart/form-data', '*/*', ''), { nil: undefined });

const STRING_TOKEN = /"(?:[^"\\]|\\.)*"/g;
const unicodeEscape = (c: string) => Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/** What a JSON value becomes after a trip through JSON text, where -0 is 0. */
const normal = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

function hasPoisoningKey(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.some(hasPoisoningKey);
  const o = v as Record<string, unknown>;
  if (Object.hasOwn(o, '__proto__')) return true;
  const ctor = o['constructor'];
  if (Object.hasOwn(o, 'constructor') && ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) return true;
  return Object.values(o).some(hasPoisoningKey);
}

describe('json channel properties', () => {
  it('random bytes never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBytes, contentType, async (body, type) => expectNoFault(await post(k, '/echo', body, type))),
      fcParams(),
    );
  });

  it('odd text never gives a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(oddText, async (text) => {
        expectNoFault(await post(k, '/echo', text));
        expectNoFault(await post(k, '/echo', JSON.stringify({ text, [text]: [text] })));
      }),
      fcParams(),
    );
  });

  it('any JSON value is echoed as it was sent, or refused 400 for a poisoning key', async () => {
    const keys = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'prototype', '\u005f_proto__'));
    const value = fc.jsonValue({ maxDepth: 6 }).chain((v) => fc.oneof(fc.constant(v), fc.dictionary(keys, fc.constant(v), { maxKeys: 3 })));
    await fc.assert(
      fc.asyncProperty(value, fc.boolean(), async (v, escaped) => {
        // JSON.stringify writes non-ASCII as it is; the escaped variant spells every key and string with \u escapes.
        let text = JSON.stringify(v);
        if (escaped) text = text.replace(STRING_TOKEN, (token) => `"${[...(JSON.parse(token) as string)].map(unicodeEscape).join('')}"`);
        const sent = await post(k, '/echo', text);
        expectNoFault(sent);
        if (hasPoisoningKey(JSON.parse(text))) expect(sent.res.statusCode).toBe(400);
        else {
          expect(sent.res.statusCode).toBe(200);
          expect(sent.res.json()).toEqual({ payload: normal(JSON.parse(text)) });
        }
      }),
      fcParams(),
    );
  });

  it('mutated documents never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 5 }).chain((v) => mutatedMany(JSON.stringify(v))),
        async (body) => expectNoFault(await post(k, '/echo', body)),
      ),
      fcParams(),
    );
  });

  it('nesting of any depth is accepted up to 100 levels and refused 400 past it', async () => {
    const opener = fc.constantFrom('[', '{"a":', '[0,', '{"\\"[":');
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20_000 }), opener, async (depth, open) => {
        const close = open.startsWith('[') ? ']' : '}';
        const body = open.repeat(depth - 1) + '[]' + close.repeat(depth - 1);
        const sent = await post(k, '/echo', body);
        expectNoFault(sent);
        expect(sent.res.statusCode).toBe(depth <= 100 ? 200 : 400);
      }),
      fcParams(100),
    );
  });

  it('huge and odd numbers are read like JSON.parse reads them', async () => {
    const digits = fc.string({ unit: fc.constantFrom('0', '1', '9'), minLength: 1, maxLength: 2000 });
    const number = fc.oneof(
      digits,
      fc.tuple(digits, digits).map(([a, b]) => `-${a}.${b}`),
      fc.tuple(digits, fc.integer({ min: -99_999, max: 99_999 })).map(([a, e]) => `${a}e${e}`),
      fc.double().map(String),
      fc.bigInt().map(String),
    );
    await fc.assert(
      fc.asyncProperty(number, async (n) => {
        const sent = await post(k, '/echo', `{"n": ${n}, "list": [${n}]}`);
        expectNoFault(sent);
        let expected: unknown;
        try {
          expected = JSON.parse(`{"n": ${n}}`).n;
        } catch {
          expect(sent.res.statusCode).toBe(400);
          return;
        }
        expect(sent.res.statusCode).toBe(200);
        // JSON has no Infinity or NaN: the echo writes them as null.
        expect(sent.res.json()).toEqual({ payload: normal({ n: expected, list: [expected] }) });
      }),
      fcParams(),
    );
  });
});
