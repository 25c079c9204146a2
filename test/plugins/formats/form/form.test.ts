import { describe, expect, it } from 'vitest';
import { FormError, parseForm } from '../../../../plugins/formats/form/codec.ts';
import { addField, type Fields } from '../../../../plugins/formats/shared/fields.ts';
import formPlugin from '../../../../plugins/formats/form/plugin.ts';
import { SvcError } from '../../../../kernel/errors.ts';
import { channelOf, hasStep, parseWith } from '../support.ts';

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(FormError);
    return (err as Error).message;
  }
  throw new Error('expected a FormError');
}

describe('form reading', () => {
  it('decodes names and values: + as space, percent-escapes as UTF-8', () => {
    expect(parseForm('name=Ann+Lee&city=K%C3%B6ln&sym=%26%3D%2B&empty=&flag')).toEqual({ name: 'Ann Lee', city: 'Köln', sym: '&=+', empty: '', flag: '' });
  });

  it('matches what browsers and URLSearchParams produce', () => {
    const sent = { q: 'a b&c=d', emoji: '😀', plus: '1+1', pct: '100%' };
    expect(parseForm(new URLSearchParams(sent).toString())).toEqual(sent);
  });

  it('turns repeated names into lists, in order', () => {
    expect(parseForm('tag=a&x=1&tag=b&tag=c')).toEqual({ tag: ['a', 'b', 'c'], x: '1' });
  });

  it('always makes name[] a list, stored without the brackets', () => {
    expect(parseForm('ids[]=1&one=x')).toEqual({ ids: ['1'], one: 'x' });
    expect(parseForm('ids[]=1&ids[]=2&ids=3')).toEqual({ ids: ['1', '2', '3'] });
    expect(parseForm('ids%5B%5D=7')).toEqual({ ids: ['7'] });
  });

  it('skips empty pairs and keeps = inside values', () => {
    expect(parseForm('&a=1&&b=x=y&')).toEqual({ a: '1', b: 'x=y' });
    expect(parseForm('')).toEqual({});
  });

  it('refuses broken percent-encoding, non-UTF-8 escapes and empty names', () => {
    expect(reason(() => parseForm('a=%zz'))).toMatch(/the value of "a" .* malformed percent-encoding/);
    expect(reason(() => parseForm('a=%E9'))).toMatch(/malformed percent-encoding or is not UTF-8/);
    // A field name as long as the body is quoted short.
    expect(reason(() => parseForm(`${'n'.repeat(100_000)}=%`))).toBe(`the value of "${'n'.repeat(40)}…" "%" has a malformed percent-encoding or is not UTF-8`);
    expect(reason(() => parseForm('a%=1'))).toMatch(/field name "a%"/);
    expect(reason(() => parseForm('=1'))).toMatch(/empty name/);
  });

  it('refuses names that would reach an object prototype', () => {
    for (const name of ['__proto__', 'constructor', 'prototype', '__proto__[]']) {
      expect(reason(() => parseForm(`${encodeURIComponent(name)}=1`))).toMatch(/is not allowed/);
    }
    const lookalike = parseForm('__proto__%5Bx%5D=1');
    expect(Object.keys(lookalike)).toEqual(['__proto__[x]']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('counts fields against the limit', () => {
    expect(Object.keys(parseForm('a=1&b=2&c=3', 3))).toHaveLength(3);
    const err = (() => {
      try {
        parseForm('a=1&b=2&c=3&d=4', 3);
      } catch (e) {
        return e as FormError;
      }
    })();
    expect(err?.message).toBe('more than 3 form fields');
    expect(err?.tooLarge).toBe(true);
  });
});

describe('shared field rules', () => {
  it('adds values the same way for form and multipart', () => {
    const f: Fields = {};
    addField(f, 'a', '1');
    addField(f, 'a', '2');
    addField(f, 'b[]', 'x');
    expect(f).toEqual({ a: ['1', '2'], b: ['x'] });
  });
});

describe('form plugin steps', () => {
  const channel = channelOf('form');

  it('taps parse only, and only on form channels', async () => {
    expect(await hasStep(formPlugin, 'parse', channel)).toBe(true);
    expect(formPlugin.hooks.serialize).toBeUndefined();
    expect(await hasStep(formPlugin, 'parse', channelOf('json'))).toBe(false);
  });

  it('sets the payload to the fields', async () => {
    const ex = await parseWith(formPlugin, channel, 'a=1&b=two+words&b=3', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(ex.payload).toEqual({ a: '1', b: ['two words', '3'] });
  });

  it('leaves an empty body alone', async () => {
    expect((await parseWith(formPlugin, channel, '')).payload).toBeUndefined();
  });

  it('answers 400 for a malformed body and for bytes that are not UTF-8', async () => {
    for (const body of ['a=%zz', Buffer.from([0x61, 0x3d, 0xff])]) {
      const err = await parseWith(formPlugin, channel, body).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SvcError);
      expect((err as SvcError).status).toBe(400);
      expect((err as SvcError).details).toMatch(/^Malformed form body: /);
    }
  });

  it('answers 413 past the channel field limit', async () => {
    const err = await parseWith(formPlugin, channelOf('form', { form: { max_fields: 2 } }), 'a=1&b=2&c=3').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).status).toBe(413);
    expect((err as SvcError).details).toBe('Form body too large: more than 2 form fields');
  });
});
