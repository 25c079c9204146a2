import { describe, expect, it } from 'vitest';
import { buildXml, createXmlReader, decodeXmlBytes, XML_DECLARATION, XmlError } from '../../../../plugins/formats/xml/codec.ts';
import xmlPlugin, { XML_CONTENT_TYPE } from '../../../../plugins/formats/xml/plugin.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import { channelOf, hasStep, parseWith, serializeWith } from '../support.ts';

const read = createXmlReader();

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(XmlError);
    return (err as Error).message;
  }
  throw new Error('expected an XmlError');
}

describe('xml reading', () => {
  it('unwraps the root element and names it under #root', () => {
    expect(read('<order><id>7</id><customer>Ann</customer></order>')).toEqual({ '#root': 'order', id: '7', customer: 'Ann' });
  });

  it('puts attributes under @name and text beside children under #text', () => {
    expect(read('<order id="7" status="new"><note lang="en">Ring twice</note></order>')).toEqual({
      '#root': 'order',
      '@id': '7',
      '@status': 'new',
      note: { '@lang': 'en', '#text': 'Ring twice' },
    });
  });

  it('keeps every value a string, trimmed, with empty elements as ""', () => {
    expect(read('<r><zip>007</zip><n> 1.50 </n><flag>true</flag><empty/><blank></blank></r>')).toEqual({
      '#root': 'r',
      zip: '007',
      n: '1.50',
      flag: 'true',
      empty: '',
      blank: '',
    });
  });

  it('gives a text-only root as #text and an empty root as no fields', () => {
    expect(read('<greeting>hello</greeting>')).toEqual({ '#root': 'greeting', '#text': 'hello' });
    expect(read('<ping/>')).toEqual({ '#root': 'ping' });
  });

  it('makes repeated elements arrays and single ones not', () => {
    expect(read('<o><line>a</line><line>b</line><tag>x</tag></o>')).toEqual({ '#root': 'o', line: ['a', 'b'], tag: 'x' });
  });

  it('makes listed paths arrays even when they occur once', () => {
    const r = createXmlReader({ alwaysArray: ['lines.line', '..tag'] });
    expect(r('<o><lines><line sku="A">2</line></lines><meta><tags><tag>x</tag></tags></meta><line>top</line></o>')).toEqual({
      '#root': 'o',
      lines: { line: [{ '@sku': 'A', '#text': '2' }] },
      meta: { tags: { tag: ['x'] } },
      line: 'top',
    });
  });

  it('never makes the root an array', () => {
    expect(createXmlReader({ alwaysArray: ['..o'] })('<o><a>1</a></o>')).toEqual({ '#root': 'o', a: '1' });
  });

  it('decodes the predefined entities and character references, in text and attributes', () => {
    expect(read('<r a="&quot;x&quot; &amp; &#39;y&#x27;"><t>&lt;b&gt; &amp; &apos; &#65;&#x1F600;</t></r>')).toEqual({
      '#root': 'r',
      '@a': `"x" & 'y'`,
      t: "<b> & ' A😀",
    });
  });

  it('takes CDATA literally and drops comments, the declaration and processing instructions', () => {
    expect(read('<?xml version="1.0"?><?style x?><!-- hi --><r><c><![CDATA[<b>&amp;</b>]]></c><!-- no --></r>')).toEqual({ '#root': 'r', c: '<b>&amp;</b>' });
  });

  it('keeps namespace prefixes in names and xmlns as attributes', () => {
    expect(read('<s:Envelope xmlns:s="urn:s"><s:Body><m:Ping xmlns:m="urn:m"/></s:Body></s:Envelope>')).toEqual({
      '#root': 's:Envelope',
      '@xmlns:s': 'urn:s',
      's:Body': { 'm:Ping': { '@xmlns:m': 'urn:m' } },
    });
  });

  it('concatenates the text parts of mixed content', () => {
    expect(read('<p>Hello <b>big</b> world</p>')).toEqual({ '#root': 'p', b: 'big', '#text': 'Helloworld' });
  });
});

describe('xml refused documents', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['an external entity (XXE)', '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>', /DOCTYPE declarations are not allowed/],
    [
      'entity expansion (billion laughs)',
      '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>',
      /DOCTYPE declarations are not allowed/,
    ],
    ['a lower-case doctype', '<!doctype r><r/>', /DOCTYPE declarations are not allowed/],
    ['a DTD without entities', '<!DOCTYPE r SYSTEM "http://example.org/r.dtd"><r/>', /DOCTYPE declarations are not allowed/],
    ['an undefined entity', '<r>&nbsp;</r>', /undefined entity &nbsp;/],
    ['a NUL character reference', '<r>&#0;</r>', /not an allowed XML character/],
    ['a surrogate character reference', '<r>&#xD800;</r>', /not an allowed XML character/],
    ['a literal NUL in text', '<r>a\u0000b</r>', /^the character U\+0000 is not allowed in XML \(line 1, column 5\)$/],
    ['a literal control character in an attribute', '<r>\n<a b="\u001B"/></r>', /U\+001B is not allowed in XML \(line 2, column 7\)/],
    ['a literal U+FFFF in CDATA', '<r><![CDATA[\uFFFF]]></r>', /U\+FFFF is not allowed/],
    ['an oversized character reference', '<r>&#99999999;</r>', /malformed character reference/],
    ['a bare ampersand', '<r>AT&T</r>', /char '&' is not expected/],
    ['an unclosed element', '<r><a>1</r>', /Expected closing tag 'a'/],
    ['an unclosed root', '<r>', /Unclosed tag 'r'/],
    ['two roots', '<a></a><b></b>', /Multiple possible root nodes/],
    ['two empty roots', '<a/><b/>', /exactly one root element/],
    ['plain text', 'hello', /char 'h' is not expected/],
    ['JSON', '{"a":1}', /not expected/],
    ['an attribute without value', '<r a/>', /boolean attribute 'a' is not allowed/],
    ['an unquoted attribute', '<r a=1/>', /Attribute 'a' is without value. \(line 1, column 4\)/],
    ['a repeated attribute', '<r a="1" a="2"/>', /repeated/],
    ['an element named __proto__', '<r><__proto__><x>1</x></__proto__></r>', /__proto__/],
    ['an element named constructor', '<r><constructor/></r>', /constructor/],
    ['a root named prototype', '<prototype/>', /prototype/],
    ['an element named toString', '<r><toString/></r>', /"toString" is not allowed/],
  ];
  for (const [label, text, why] of cases) {
    it(`refuses ${label}`, () => {
      expect(reason(() => read(text))).toMatch(why);
    });
  }

  it('refuses a flood of character references past the limit', () => {
    const r = createXmlReader({ maxEntityReferences: 100 });
    expect(r(`<r>${'&#65;'.repeat(100)}</r>`)['#text']).toBe('A'.repeat(100));
    expect(reason(() => r(`<r>${'&#65;'.repeat(101)}</r>`))).toMatch(/more than 100 entity and character references/);
    expect(reason(() => read(`<r>${'&#65;'.repeat(10_001)}</r>`))).toMatch(/more than 10000/);
  });

  it('counts references per document, not per reader', () => {
    const r = createXmlReader({ maxEntityReferences: 3 });
    for (let i = 0; i < 5; i++) expect(r('<r>&amp;&amp;&amp;</r>')['#text']).toBe('&&&');
  });

  it('cuts long parser reasons to 300 characters, keeping the position', () => {
    const long = 'b'.repeat(10_000);
    const clipped = reason(() => read(`<r><x${long}></y${long}></r>`));
    expect(clipped).toHaveLength(300);
    expect(clipped).toMatch(/^Expected closing tag 'xbbb+… \(line 1, column \d+\)$/);
    const parsed = reason(() => createXmlReader({ maxDepth: 2 })('<a><b><c></c></b></a>'));
    expect(parsed).toBe('elements nested deeper than 2 levels');
    // A surrogate pair is not split by the cut.
    const emoji = reason(() => read(`<r ${'😀'.repeat(400)}/>`));
    expect(emoji.length).toBeLessThanOrEqual(300);
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('refuses nesting deeper than the limit', () => {
    const deep = (n: number) => '<a>'.repeat(n) + '</a>'.repeat(n);
    expect(() => createXmlReader({ maxDepth: 10 })(deep(10))).not.toThrow();
    expect(reason(() => createXmlReader({ maxDepth: 10 })(deep(11)))).toBe('elements nested deeper than 10 levels');
    expect(reason(() => read(deep(101)))).toBe('elements nested deeper than 100 levels');
  });

  it('leaves Object.prototype untouched', () => {
    expect(() => read('<r><__proto__><polluted>yes</polluted></__proto__></r>')).toThrow();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(read('<r __proto__="x"/>')).toEqual({ '#root': 'r', '@__proto__': 'x' });
    expect(({} as Record<string, unknown>)['@__proto__']).toBeUndefined();
  });
});

describe('xml bytes', () => {
  it('reads UTF-8, with or without a byte-order mark', () => {
    expect(decodeXmlBytes(Buffer.from('<r>é</r>'))).toBe('<r>é</r>');
    expect(decodeXmlBytes(Buffer.from('\uFEFF<r>é</r>'))).toBe('<r>é</r>');
  });

  it('reads ISO-8859-1 when the declaration says so', () => {
    const bytes = Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><r>\xe9\x80</r>', 'latin1');
    expect(read(decodeXmlBytes(bytes))).toEqual({ '#root': 'r', '#text': 'é\u0080' });
  });

  it('refuses bytes that are not UTF-8 and encodings it does not read', () => {
    expect(reason(() => decodeXmlBytes(Buffer.from('<r>\xe9</r>', 'latin1')))).toMatch(/not valid UTF-8/);
    expect(reason(() => decodeXmlBytes(Buffer.from('<?xml version="1.0" encoding="UTF-16"?><r/>')))).toMatch(/unsupported encoding "UTF-16"/);
  });
});

describe('xml writing', () => {
  const doc = (s: string) => XML_DECLARATION + s;

  it('uses the only key as the root element', () => {
    expect(buildXml({ order: { '@id': 7, item: ['a', 'b'], total: 1.5, paid: false } })).toBe(doc('<order id="7"><item>a</item><item>b</item><total>1.5</total><paid>false</paid></order>'));
  });

  it('uses #root when given, else wraps in <response>', () => {
    expect(buildXml({ '#root': 'ack', status: 'ok' })).toBe(doc('<ack><status>ok</status></ack>'));
    expect(buildXml({ status: 'ok', id: 1 })).toBe(doc('<response><status>ok</status><id>1</id></response>'));
    expect(buildXml({ '@v': '1' })).toBe(doc('<response v="1"></response>'));
    expect(buildXml({ items: [1, 2] })).toBe(doc('<response><items>1</items><items>2</items></response>'));
  });

  it('writes arrays as items and scalars as text of <response>', () => {
    expect(buildXml([1, { a: 2 }])).toBe(doc('<response><item>1</item><item><a>2</a></item></response>'));
    expect(buildXml('hi')).toBe(doc('<response>hi</response>'));
    expect(buildXml(42)).toBe(doc('<response>42</response>'));
    expect(buildXml(null)).toBe(doc('<response></response>'));
  });

  it('escapes text and attribute values', () => {
    expect(buildXml({ r: { '@q': 'a"b<&', '#text': '1 < 2 & ]]> 3' } })).toBe(doc('<r q="a&quot;b&lt;&amp;">1 &lt; 2 &amp; ]]&gt; 3</r>'));
  });

  it('writes null as an empty element and leaves undefined out', () => {
    expect(buildXml({ r: { a: null, b: undefined, c: '' } })).toBe(doc('<r><a/><c></c></r>'));
  });

  it('round-trips what it reads', () => {
    const text = '<order id="7"><customer>Ann &amp; Bob</customer><line sku="A">2</line><line sku="B">1</line><note/></order>';
    const payload = read(text);
    expect(read(buildXml(payload))).toEqual(payload);
    expect(buildXml(payload)).toBe(doc('<order id="7"><customer>Ann &amp; Bob</customer><line sku="A">2</line><line sku="B">1</line><note></note></order>'));
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ['a key with a space', { r: { 'a b': 1 } }, /"a b" is not a valid XML element name/],
    ['a key starting with a digit', { r: { '1a': 1 } }, /not a valid XML element name/],
    ['an invalid attribute name', { r: { '@a b': 1 } }, /not a valid XML attribute name/],
    ['an object as attribute value', { r: { '@a': { b: 1 } } }, /attribute value must be text/],
    ['an invalid #root', { '#root': 'a b' }, /#root must be a valid XML element name/],
    ['a NUL character', { r: 'a\u0000b' }, /character XML cannot carry/],
    ['a lone surrogate', { r: '\uD800' }, /character XML cannot carry/],
  ];
  for (const [label, value, why] of bad) {
    it(`refuses ${label}`, () => {
      expect(reason(() => buildXml(value))).toMatch(why);
    });
  }

  it('accepts non-ASCII element names', () => {
    expect(buildXml({ größe: 'M' })).toBe(doc('<größe>M</größe>'));
    expect(read('<größe>M</größe>')).toEqual({ '#root': 'größe', '#text': 'M' });
  });
});

describe('xml plugin steps', () => {
  const channel = channelOf('xml', { xml: { always_array: ['line'] } });

  it('taps parse and serialize only on xml channels', async () => {
    expect(await hasStep(xmlPlugin, 'parse', channel)).toBe(true);
    expect(await hasStep(xmlPlugin, 'serialize', channel)).toBe(true);
    expect(await hasStep(xmlPlugin, 'parse', channelOf('json'))).toBe(false);
    expect(await hasStep(xmlPlugin, 'serialize', channelOf('hl7'))).toBe(false);
  });

  it('sets the payload with the channel array paths applied', async () => {
    const ex = await parseWith(xmlPlugin, channel, '<order><line>a</line></order>');
    expect(ex.payload).toEqual({ '#root': 'order', line: ['a'] });
  });

  it('leaves an empty body alone', async () => {
    expect((await parseWith(xmlPlugin, channel, '')).payload).toBeUndefined();
  });

  it('answers malformed XML with 400 and the parser reason', async () => {
    const err = await parseWith(xmlPlugin, channel, '<!DOCTYPE x><x/>').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).code).toBe('MALFORMED_BODY');
    expect((err as SvcError).details).toBe('Malformed XML: DOCTYPE declarations are not allowed');
  });

  it('writes objects as XML with the XML content type', async () => {
    const r = await serializeWith(xmlPlugin, channel, { body: { ok: { id: 1 } } });
    expect(r.body).toBe(`${XML_DECLARATION}<ok><id>1</id></ok>`);
    expect(r.contentType).toBe(XML_CONTENT_TYPE);
  });

  it('sends text and bytes as they are and keeps the content type the service chose', async () => {
    expect(await serializeWith(xmlPlugin, channel, { body: '<a/>' })).toMatchObject({ body: '<a/>', contentType: XML_CONTENT_TYPE });
    const pdf = Buffer.from('%PDF-1.4');
    const r = await serializeWith(xmlPlugin, channel, { body: pdf, headers: { 'content-type': 'application/pdf' } });
    expect(r.body).toBe(pdf);
    expect(r.contentType).toBeUndefined();
    expect((await serializeWith(xmlPlugin, channel, { body: { a: 1 }, contentType: 'text/xml' })).contentType).toBe('text/xml');
    expect(await serializeWith(xmlPlugin, channel, { body: undefined })).toMatchObject({ body: undefined, contentType: undefined });
  });

  it('answers 500 when the service output cannot be XML', async () => {
    const err = await serializeWith(xmlPlugin, channel, { body: { 'bad name': 1 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).status).toBe(500);
    expect((err as SvcError).details).toMatch(/^Service output cannot be written as XML: /);
  });
});
