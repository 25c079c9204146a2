import { describe, expect, it } from 'vitest';
import { ANY_DEFINITION, CredentialBook, scopeOf, type Presented } from '../../../../plugins/security/shared/credential-book.ts';
import { hashSecret } from '../../../../plugins/security/shared/secrets.ts';

// Cheap hashes keep these tests fast; the cost parameters travel with each hash.
const CHEAP = { log2N: 10, r: 8, p: 1 } as const;

/** Token format of these tests: "username|secret" (or just "secret" for key-like books). */
function bookWithParseCount(type = 'basic_auth', elapsed?: () => number) {
  let parses = 0;
  const book = new CredentialBook({
    type,
    elapsed,
    parse: (token): Presented | undefined => {
      parses++;
      if (token === '' || token.includes('!')) return undefined;
      const bar = token.indexOf('|');
      return bar < 0 ? { secret: token } : { username: token.slice(0, bar), secret: token.slice(bar + 1) };
    },
  });
  return { book, parses: () => parses };
}

async function basicBook() {
  const { book, parses } = bookWithParseCount();
  const alice = book.makeRecord('alice-def', await hashSecret('same-password', CHEAP), 'alice');
  const bob = book.makeRecord('bob-def', await hashSecret('same-password', CHEAP), 'bob');
  book.replaceAll([alice, bob]);
  return { book, parses, alice, bob };
}

describe('CredentialBook', () => {
  it('verifies once, then answers from the cache synchronously with the same record', async () => {
    const { book, alice } = await basicBook();
    const first = book.authenticate('alice|same-password', scopeOf(['alice-def']));
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe(alice);
    const second = book.authenticate('alice|same-password', scopeOf(['alice-def']));
    expect(second).toBe(alice);
    expect(alice.auth).toEqual({ type: 'basic_auth', definition: 'alice-def', username: 'alice' });
    expect(Object.isFrozen(alice.auth)).toBe(true);
  });

  it('checks username and password: a shared password does not let one user in as another', async () => {
    const { book, bob } = await basicBook();
    expect(await book.authenticate('bob|same-password', ANY_DEFINITION)).toBe(bob);
    expect(await book.authenticate('bob|same-password', scopeOf(['alice-def']))).toBeUndefined();
    expect(await book.authenticate('carol|same-password', ANY_DEFINITION)).toBeUndefined();
    expect(await book.authenticate('alice|wrong', ANY_DEFINITION)).toBeUndefined();
    expect(await book.authenticate('alice|same-password ', ANY_DEFINITION)).toBeUndefined();
  });

  it('never answers from the cache for a definition outside the scope', async () => {
    const { book, alice } = await basicBook();
    expect(await book.authenticate('alice|same-password', ANY_DEFINITION)).toBe(alice);
    const other = book.authenticate('alice|same-password', scopeOf(['bob-def']));
    expect(other).toBeInstanceOf(Promise);
    expect(await other).toBeUndefined();
  });

  it('refuses a credential that just failed without another KDF run, until a record changes', async () => {
    const { book, parses } = await basicBook();
    const scope = scopeOf(['alice-def']);
    expect(await book.authenticate('alice|wrong', scope)).toBeUndefined();
    const before = parses();
    for (let i = 0; i < 5; i++) expect(await book.authenticate('alice|wrong', scope)).toBeUndefined();
    expect(parses()).toBe(before);
    // The admin sets exactly that password: the failure is forgotten at once.
    book.put(book.makeRecord('alice-def', await hashSecret('wrong', CHEAP), 'alice'));
    expect((await book.authenticate('alice|wrong', scope))?.definition).toBe('alice-def');
  });

  it('remembers a failure for a minute of time that passed (monotonic: a wall clock set back does not lengthen it)', async () => {
    let elapsed = 1_000;
    const { book, parses } = bookWithParseCount('basic_auth', () => elapsed);
    book.replaceAll([book.makeRecord('alice-def', await hashSecret('right', CHEAP), 'alice')]);
    expect(await book.authenticate('alice|wrong', ANY_DEFINITION)).toBeUndefined();
    const before = parses();
    elapsed += 59_999;
    expect(await book.authenticate('alice|wrong', ANY_DEFINITION)).toBeUndefined();
    expect(parses()).toBe(before);
    elapsed += 1;
    expect(await book.authenticate('alice|wrong', ANY_DEFINITION)).toBeUndefined();
    expect(parses()).toBe(before + 1);
  });

  it('refuses malformed tokens without caching them', async () => {
    const { book } = await basicBook();
    expect(await book.authenticate('', ANY_DEFINITION)).toBeUndefined();
    expect(await book.authenticate('alice!|same-password', ANY_DEFINITION)).toBeUndefined();
    expect(book.authenticate('alice!|same-password', ANY_DEFINITION)).toBeInstanceOf(Promise);
  });

  it('invalidates a cached credential at once when the secret rotates', async () => {
    const { book } = await basicBook();
    const scope = scopeOf(['alice-def']);
    await book.authenticate('alice|same-password', scope);
    book.put(book.makeRecord('alice-def', await hashSecret('rotated', CHEAP), 'alice'));
    const old = book.authenticate('alice|same-password', scope);
    expect(old).toBeInstanceOf(Promise);
    expect(await old).toBeUndefined();
    expect((await book.authenticate('alice|rotated', scope))?.definition).toBe('alice-def');
  });

  it('invalidates when the username changes or the definition goes, keeps the cache when nothing changed', async () => {
    const { book, alice, bob } = await basicBook();
    await book.authenticate('alice|same-password', ANY_DEFINITION);
    await book.authenticate('bob|same-password', ANY_DEFINITION);
    book.replaceAll([alice, bob]);
    expect(book.authenticate('alice|same-password', ANY_DEFINITION)).toBe(alice);
    book.replaceAll([book.makeRecord('alice-def', alice.hash, 'alice2')]);
    expect(await book.authenticate('alice|same-password', ANY_DEFINITION)).toBeUndefined();
    expect(await book.authenticate('bob|same-password', ANY_DEFINITION)).toBeUndefined();
    expect((await book.authenticate('alice2|same-password', ANY_DEFINITION))?.auth.username).toBe('alice2');
  });

  it('drops a verification that finished after the definition changed', async () => {
    const { book } = await basicBook();
    const rotated = book.makeRecord('alice-def', await hashSecret('rotated', CHEAP), 'alice');
    const running = book.authenticate('alice|same-password', ANY_DEFINITION);
    book.put(rotated);
    expect(await running).toBeUndefined();
  });

  it('lets concurrent first requests with the same credentials share one verification', async () => {
    const { book, parses, alice } = await basicBook();
    const before = parses();
    const results = await Promise.all(Array.from({ length: 8 }, () => book.authenticate('alice|same-password', ANY_DEFINITION)));
    expect(results.every((r) => r === alice)).toBe(true);
    expect(parses() - before).toBe(1);
  });

  it('finds an API key among several candidates (no username)', async () => {
    const { book } = bookWithParseCount('apikey');
    book.replaceAll([
      book.makeRecord('app-a', await hashSecret('key-a', CHEAP)),
      book.makeRecord('app-b', await hashSecret('key-b', CHEAP)),
    ]);
    expect((await book.authenticate('key-b', scopeOf(['app-a', 'app-b'])))?.auth).toEqual({ type: 'apikey', definition: 'app-b', username: 'app-b' });
    expect(await book.authenticate('key-b', scopeOf(['app-a']))).toBeUndefined();
    expect(await book.authenticate('key-c', ANY_DEFINITION)).toBeUndefined();
  });

  it('costs microseconds on a cache hit, not a KDF', async () => {
    const { book, alice } = await basicBook();
    const scope = scopeOf(['alice-def']);
    await book.authenticate('alice|same-password', scope);
    const hits = 20_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < hits; i++) if (book.authenticate('alice|same-password', scope) !== alice) throw new Error('miss');
    const perHitMicros = Number(process.hrtime.bigint() - started) / 1000 / hits;
    // One scrypt check at the production cost takes tens of milliseconds.
    expect(perHitMicros).toBeLessThan(50);
  });
});
