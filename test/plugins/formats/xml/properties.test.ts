import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { expectNoFault, fcParams, mutatedMany, oddText, post, randomBytes } from '../properties.ts';

/** Arbitrary bodies on an xml channel with an echo service in the sandbox: never a 5xx. */

const CONFIG = `
channel_rest:
  - { name: echo, url_path: /echo, service: echo, security: none, data_format: xml, xml: { always_array: [..item] } }
`;
// The payload goes back as it came: the reader's output must be writable XML.
const SERVICES = { 'echo.js': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ctx.payload ?? { empty: '' } });` };

let k: TestKernel;
beforeAll(async () => {
  k = await startKernel({ config: CONFIG, services: SERVICES });
});
afterAll(() => k?.close());

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
/** Characters XML 1.0 can carry, so a generated document is well-formed. */
const xmlText = fc.string({ unit: 'grapheme', maxLength: 30 }).map((s) => s.replace(/[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]/g, ''));
const name = fc.oneof(
  fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_.-]{0,12}$/),
  fc.constantFrom('item', 'é', 'ns:el', 'x-y', 'Zoë', 'a.b', '_'),
);

interface Element {
  name: string;
  attributes: Array<[string, string]>;
  text: string;
  children: Element[];
}

const element: fc.Arbitrary<Element> = fc.letrec<{ el: Element }>((tie) => ({
  el: fc.record({
    name,
    attributes: fc.uniqueArray(fc.tuple(name, xmlText), { maxLength: 3, selector: ([n]) => n }),
    text: xmlText,
    children: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constant<Element[]>([]), fc.array(tie('el') as fc.Arbitrary<Element>, { maxLength: 4 })),
  }),
})).el;

function write(e: Element): string {
  const attrs = e.attributes.map(([n, v]) => ` ${n}="${escapeXml(v)}"`).join('');
  return `<${e.name}${attrs}>${escapeXml(e.text)}${e.children.map(write).join('')}</${e.name}>`;
}

const prolog = fc.constantFrom('', '<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-8"?>', '\uFEFF', '<!-- c -->', '<?pi x?>');
const document = fc.tuple(prolog, element).map(([p, e]) => p + write(e));

describe('xml channel properties', () => {
  it('random bytes never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(randomBytes, async (body) => expectNoFault(await post(k, '/echo', body, 'application/xml'))),
      fcParams(),
    );
  });

  it('odd text, as a document or inside one, never gives a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(oddText, async (text) => {
        expectNoFault(await post(k, '/echo', text));
        expectNoFault(await post(k, '/echo', `<r a="${text}">${text}<![CDATA[${text}]]></r>`));
        expectNoFault(await post(k, '/echo', `<r>${escapeXml(text)}</r>`));
      }),
      fcParams(),
    );
  });

  it('well-formed documents are read and written back with a 200', async () => {
    await fc.assert(
      fc.asyncProperty(document, async (doc) => {
        const sent = await post(k, '/echo', doc, 'application/xml');
        expectNoFault(sent);
        expect(sent.res.statusCode, sent.res.body).toBe(200);
      }),
      fcParams(),
    );
  });

  it('mutated documents never give a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        document.chain((d) => mutatedMany(d)),
        async (body) => expectNoFault(await post(k, '/echo', body)),
      ),
      fcParams(),
    );
  });

  it('references, declarations and encodings of any kind never give a 5xx', async () => {
    const reference = fc.oneof(
      fc.constantFrom('&amp;', '&lt;', '&nbsp;', '&#0;', '&#xD800;', '&#x1F600;', '&#1114112;', '&#x;', '&', '&#65', '&unknown;'),
      fc.integer({ min: 0, max: 0x11ffff }).map((n) => `&#${n};`),
    );
    const declaration = fc.oneof(fc.constant(''), fc.string({ maxLength: 20 }).map((enc) => `<?xml version="1.0" encoding="${enc}"?>`), fc.constantFrom('<?xml version="1.0" encoding="ISO-8859-1"?>', '<!DOCTYPE r>'));
    await fc.assert(
      fc.asyncProperty(declaration, fc.array(reference, { maxLength: 5 }), fc.uint8Array({ maxLength: 8 }), async (decl, refs, high) => {
        const body = Buffer.concat([Buffer.from(`${decl}<r a="${refs.join('')}">${refs.join('')}`), Buffer.from(high), Buffer.from('</r>')]);
        expectNoFault(await post(k, '/echo', body));
      }),
      fcParams(),
    );
  });

  it('nesting of any depth is accepted up to 100 levels and refused 400 past it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5000 }), fc.boolean(), async (depth, leafText) => {
        const body = '<a>'.repeat(depth) + (leafText ? 'x' : '') + '</a>'.repeat(depth);
        const sent = await post(k, '/echo', body);
        expectNoFault(sent);
        expect(sent.res.statusCode).toBe(depth <= 100 ? 200 : 400);
      }),
      fcParams(100),
    );
  });
});
