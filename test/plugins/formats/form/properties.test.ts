import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies on a form channel with an echo service in the sandbox: never a 5xx. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: form, form: { max_fields: 20 } }
`;
const SERVICES = { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ payload: ctx.payload ?? null }) });` };

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

const FORM = 'application/x-www-form-urlencoded';
const contentType = fc.option(fc.constantFrom(FORM, `${FORM}; charset=utf-8`, 'text/plain', 'application/json', ''), { nil: undefined });

/** Well-formed UTF-16 (lone surrogates cannot be percent-encoded as UTF-8). */
const wellFormed = oddText.map((s) => s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, ''));
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

describe('form channel properties', () => {
  it('random bytes never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBytes, contentType, async (body, type) => expectNoFault(await post(k, '/echo', body, type))),
      fcParams(),
    );
  });

  it('odd text, raw or percent-encoded, never gives a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(oddText, async (text) => {
        expectNoFault(await post(k, '/echo', text, FORM));
        expectNoFault(await post(k, '/echo', `${text}=${text}&a=${text}`, FORM));
      }),
      fcParams(),
    );
  });

  it('encoded fields are read back as sent, or refused with a 4xx for a forbidden name or too many fields', async () => {
    const pair = fc.tuple(fc.oneof(wellFormed, fc.constantFrom('__proto__', 'constructor', 'a[]', 'prototype')), wellFormed);
    await fc.assert(
      fc.asyncProperty(fc.array(pair, { maxLength: 25 }), async (pairs) => {
        const body = new URLSearchParams(pairs).toString();
        const sent = await post(k, '/echo', body, FORM);
        expectNoFault(sent);
        const named = pairs.filter(([n]) => n !== '');
        const names = named.map(([n]) => (n.endsWith('[]') ? n.slice(0, -2) : n));
        if (named.length > 20) expect(sent.res.statusCode).toBe(413);
        else if (named.length < pairs.length || names.some((n) => FORBIDDEN.has(n))) expect(sent.res.statusCode).toBe(400);
        else {
          expect(sent.res.statusCode).toBe(200);
          const payload = (sent.res.json() as { payload: Record<string, unknown> }).payload;
          for (const [name, value] of named) {
            const got = payload[name.endsWith('[]') ? name.slice(0, -2) : name];
            expect(Array.isArray(got) ? got : [got]).toContain(value);
          }
        }
      }),
      fcParams(),
    );
  });

  it('mutated and broken escapes never give a 5xx', async () => {
    const escapes = fc.array(fc.oneof(fc.constantFrom('%', '%2', '%zz', '%C3', '%C3%28', '%ED%A0%80', '%F4%90%80%80', '+', '&', '=', '[]', '%00'), wellFormed), { maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(
        escapes.chain((parts) => mutatedMany(`${parts.join('')}=${parts.reverse().join('')}&x=1`)),
        async (body) => expectNoFault(await post(k, '/echo', body, FORM)),
      ),
      fcParams(),
    );
  });

  it('a long name or value never makes a long error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 200_000 }), fc.constantFrom('%', '%zz', '%C3'), async (length, broken) => {
        expectNoFault(await post(k, '/echo', `${'n'.repeat(length)}=${broken}`, FORM));
        expectNoFault(await post(k, '/echo', `${'n'.repeat(length)}${broken}=1`, FORM));
      }),
      fcParams(30),
    );
  });
});
