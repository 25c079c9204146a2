import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AddressCache, AddressSet, parseClientAddress, type ClientAddress } from '../../../../plugins/rate-limit/addresses.ts';
import {
  addressTextArb,
  bits128Arb,
  cidrEntryArb,
  dotted,
  isMappedV4,
  junkArb,
  refAddress,
  refCidr,
  refContains,
  refNetwork,
  spellingArb,
  spellIPv6,
} from './reference.ts';

const ALL = (1n << 128n) - 1n;

function bitsOf(a: ClientAddress): bigint {
  return (BigInt(a.w0) << 96n) | (BigInt(a.w1) << 64n) | (BigInt(a.w2) << 32n) | BigInt(a.w3);
}

/** The per-client key the docs promise: the IPv4 address, or the IPv6 /64. */
function refCounterKey(bits: bigint): string {
  if (isMappedV4(bits)) return dotted(bits & 0xffffffffn);
  const groups = [112n, 96n, 80n, 64n].map((s) => ((bits >> s) & 0xffffn).toString(16));
  return `${groups.join(':')}::/64`;
}

const anyTextArb = fc.oneof(addressTextArb, junkArb);

describe('client addresses against a BigInt reference', () => {
  it('every spelling parses to the bits it stands for; junk is refused, never thrown', () => {
    fc.assert(
      fc.property(anyTextArb, fc.constantFrom('', ' ', '\t'), (text, pad) => {
        const input = pad + text + pad;
        const expected = refAddress(input);
        const parsed = parseClientAddress(input);
        expect(parsed.valid).toBe(expected !== undefined);
        if (expected === undefined) {
          expect(parsed.counterKey).toBe('unparsable');
          return;
        }
        expect(bitsOf(parsed)).toBe(expected);
        expect(parsed.counterKey).toBe(refCounterKey(expected));
      }),
      { numRuns: 1000 },
    );
  });

  it('two spellings of the same bits are the same client', () => {
    fc.assert(
      fc.property(bits128Arb, spellingArb, spellingArb, (bits, a, b) => {
        const first = parseClientAddress(spellIPv6(bits, a));
        const second = parseClientAddress(spellIPv6(bits, b));
        expect(second).toEqual(first);
        if (isMappedV4(bits)) expect(parseClientAddress(dotted(bits & 0xffffffffn))).toEqual(first);
      }),
      { numRuns: 500 },
    );
  });

  it('the bounded cache answers what a fresh parse answers', () => {
    fc.assert(
      fc.property(fc.array(anyTextArb, { maxLength: 40 }), fc.integer({ min: 1, max: 8 }), (texts, max) => {
        const cache = new AddressCache(max);
        for (const text of [...texts, ...texts]) expect(cache.get(text)).toEqual(parseClientAddress(text));
      }),
      { numRuns: 200 },
    );
  });
});

/** A client near the edges of one entry's network, or anywhere. */
function clientNear(entries: string[]): fc.Arbitrary<bigint> {
  const networks = entries.map(refCidr).filter((c) => c !== undefined).map(refNetwork);
  const anywhere = bits128Arb;
  if (networks.length === 0) return anywhere;
  const edge = fc
    .tuple(fc.constantFrom(...networks), fc.boolean(), fc.integer({ min: -2, max: 2 }))
    .map(([n, atEnd, d]) => ((atEnd ? n.last : n.first) + BigInt(d)) & ALL);
  const inside = fc
    .tuple(fc.constantFrom(...networks), fc.bigInt({ min: 0n, max: ALL }))
    .map(([n, r]) => n.first + (r % (n.last - n.first + 1n)));
  return fc.oneof(anywhere, edge, inside);
}

/** An address text for bits: IPv4 dotted when it is a mapped one (half the time), else some IPv6 spelling. */
const spelled = (bits: bigint) =>
  fc.tuple(spellingArb, fc.boolean()).map(([how, asV4]) => (asV4 && isMappedV4(bits) ? dotted(bits & 0xffffffffn) : spellIPv6(bits, how)));

describe('cidr_list matching against a BigInt reference', () => {
  it('has() agrees with "some entry holds the bits" for every prefix length, both families and mapped ranges', () => {
    const caseArb = fc
      .array(cidrEntryArb, { maxLength: 12 })
      .chain((entries) => fc.tuple(fc.constant(entries), clientNear(entries).chain(spelled)));
    fc.assert(
      fc.property(caseArb, ([entries, client]) => {
        const set = AddressSet.parse(entries);
        const bits = refAddress(client)!;
        const expected = entries.some((e) => refContains(refCidr(e)!, bits));
        expect(set.has(parseClientAddress(client))).toBe(expected);
        expect(set.isEmpty).toBe(entries.length === 0);
      }),
      { numRuns: 1000 },
    );
  });

  it('every prefix length splits its network exactly at the edges', () => {
    const caseArb = fc.oneof(
      fc.tuple(fc.bigInt({ min: 0n, max: 0xffffffffn }), fc.integer({ min: 0, max: 32 })).map(([v4, p]) => `${dotted(v4)}/${p}`),
      fc.tuple(bits128Arb, fc.integer({ min: 0, max: 128 })).map(([bits, p]) => `${spellIPv6(bits, { pad: Array(8).fill(1), upper: Array(8).fill(false), compress: 0, dottedTail: false, zone: undefined })}/${p}`),
    );
    fc.assert(
      fc.property(caseArb, (entry) => {
        const set = AddressSet.parse([entry]);
        const { first, last } = refNetwork(refCidr(entry)!);
        const at = (bits: bigint) => set.has(parseClientAddress(spellIPv6(bits, { pad: Array(8).fill(4), upper: Array(8).fill(true), compress: -1, dottedTail: false, zone: undefined })));
        expect(at(first)).toBe(true);
        expect(at(last)).toBe(true);
        if (first > 0n) expect(at(first - 1n)).toBe(false);
        if (last < ALL) expect(at(last + 1n)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('a client that is no address matches no list, however broad', () => {
    fc.assert(
      fc.property(junkArb, fc.array(cidrEntryArb, { maxLength: 4 }), (client, entries) => {
        fc.pre(refAddress(client) === undefined);
        const list = [...entries, '0.0.0.0/0', '::/0'];
        expect(AddressSet.parse(list).has(parseClientAddress(client))).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});
