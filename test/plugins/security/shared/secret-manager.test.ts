import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { openTestStore } from '../../../helpers/store.ts';
import { ANY_DEFINITION, CredentialBook, type Presented } from '../../../../plugins/security/shared/credential-book.ts';
import { SecretManager, storeSecretOffline, type DefinitionInput } from '../../../../plugins/security/shared/secret-manager.ts';
import { hashSecret } from '../../../../plugins/security/shared/secrets.ts';
import { secretRows } from '../../../../plugins/security/shared/secret-store.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function newDataFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-secrets-'));
  dirs.push(dir);
  return join(dir, 'svc.db');
}

/** A "server process": its own store handle, book and manager over the given file. */
async function boot(file: string) {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const store = await openTestStore(file);
  const parse = (token: string): Presented => ({ secret: token });
  const book = new CredentialBook({ type: 'apikey', parse });
  const manager = new SecretManager({ store, clock: new ManualClock(), log }, book, 'key', 'svc secdef set-key');
  const accepts = async (secret: string, definition: string) => (await book.authenticate(secret, ANY_DEFINITION))?.definition === definition;
  return { store, book, manager, lines, accepts };
}

const app = (secret?: string): DefinitionInput => ({ name: 'app', secret });

describe('SecretManager', () => {
  it('generates, stores and warns about a definition without a secret, without ever logging or storing it in clear', async () => {
    const file = newDataFile();
    const server = await boot(file);
    await server.manager.apply([app()]);
    const row = (await secretRows(server.store, 'apikey')).get('app');
    expect(row).toMatchObject({ source: 'generated', config_hash: null });
    expect(row?.secret_hash).toMatch(/^scrypt\$/);
    expect(server.book.current('app')?.hash).toBe(row?.secret_hash);
    const warnings = server.lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0].msg).toContain('svc secdef set-key app');
    // Same file, new process: the generated secret stays (nobody could ever have used a new one).
    await server.store.close();
    const again = await boot(file);
    await again.manager.apply([app()]);
    expect(again.book.current('app')?.hash).toBe(row?.secret_hash);
    await again.store.close();
  });

  it('stores a config value hashed only, and accepts it', async () => {
    const server = await boot(newDataFile());
    await server.manager.apply([app('config-key-1')]);
    expect(await server.accepts('config-key-1', 'app')).toBe(true);
    expect(await server.accepts('config-key-2', 'app')).toBe(false);
    const dump = JSON.stringify(await server.store.all('SELECT * FROM security_secret'));
    expect(dump).not.toContain('config-key-1');
    expect(server.lines.join('')).not.toContain('config-key-1');
    await server.store.close();
  });

  it('keeps a CLI-set secret across reloads and restarts while the config value is unchanged', async () => {
    const file = newDataFile();
    const server = await boot(file);
    await server.manager.apply([app('config-key')]);
    const configHash = (await secretRows(server.store, 'apikey')).get('app')!.config_hash;
    await server.manager.setHash('app', await hashSecret('rotated-key'), configHash);
    expect(await server.accepts('rotated-key', 'app')).toBe(true);
    expect(await server.accepts('config-key', 'app')).toBe(false);
    await server.manager.apply([app('config-key')]);
    expect(await server.accepts('rotated-key', 'app')).toBe(true);
    await server.store.close();

    const restarted = await boot(file);
    await restarted.manager.apply([app('config-key')]);
    expect(await restarted.accepts('rotated-key', 'app')).toBe(true);
    expect(await restarted.accepts('config-key', 'app')).toBe(false);
    await restarted.store.close();
  });

  it('lets an edited config value win over an earlier CLI secret', async () => {
    const file = newDataFile();
    const server = await boot(file);
    await server.manager.apply([app('config-key')]);
    await server.manager.setHash('app', await hashSecret('rotated-key'), (await secretRows(server.store, 'apikey')).get('app')!.config_hash);
    await server.manager.apply([app('edited-config-key')]);
    expect(await server.accepts('edited-config-key', 'app')).toBe(true);
    expect(await server.accepts('rotated-key', 'app')).toBe(false);
    expect((await secretRows(server.store, 'apikey')).get('app')?.source).toBe('config');
    await server.store.close();
  });

  it('keeps the stored secret when the config value is removed', async () => {
    const server = await boot(newDataFile());
    await server.manager.apply([app('config-key')]);
    await server.manager.apply([app()]);
    expect(await server.accepts('config-key', 'app')).toBe(true);
    await server.store.close();
  });

  it('forgets the secret of a removed definition: the name reused later starts afresh', async () => {
    const server = await boot(newDataFile());
    await server.manager.apply([app('old-client-key'), { name: 'other', secret: 'other-key' }]);
    await server.manager.apply([{ name: 'other', secret: 'other-key' }]);
    expect([...(await secretRows(server.store, 'apikey')).keys()]).toEqual(['other']);
    expect(await server.accepts('old-client-key', 'app')).toBe(false);
    await server.manager.apply([app(), { name: 'other', secret: 'other-key' }]);
    expect(await server.accepts('old-client-key', 'app')).toBe(false);
    expect((await secretRows(server.store, 'apikey')).get('app')?.source).toBe('generated');
    await server.store.close();
  });

  it('keeps the record (and so the verified cache) when a reload changes nothing', async () => {
    const server = await boot(newDataFile());
    await server.manager.apply([app('config-key')]);
    const record = server.book.current('app');
    await server.book.authenticate('config-key', ANY_DEFINITION);
    await server.manager.apply([app('config-key')]);
    expect(server.book.current('app')).toBe(record);
    expect(server.book.authenticate('config-key', ANY_DEFINITION)).toBe(record);
    await server.store.close();
  });

  it('refuses to set the secret of a definition it does not have', async () => {
    const server = await boot(newDataFile());
    await server.manager.apply([app('k')]);
    await expect(server.manager.setHash('nope', await hashSecret('x'), null)).rejects.toThrow(/no apikey definition named 'nope'/);
    await server.store.close();
  });

  it('takes a secret the CLI stored while no server ran, unless the config value changed since', async () => {
    const file = newDataFile();
    const offline = await openTestStore(file);
    const configHash = await hashSecret('config-key');
    await storeSecretOffline(offline, { definition: 'app', type: 'apikey', hash: await hashSecret('cli-key'), configHash, now: 1 });
    await offline.close();

    const server = await boot(file);
    await server.manager.apply([app('config-key')]);
    expect(await server.accepts('cli-key', 'app')).toBe(true);
    await server.manager.apply([app('newer-config-key')]);
    expect(await server.accepts('newer-config-key', 'app')).toBe(true);
    expect(await server.accepts('cli-key', 'app')).toBe(false);
    await server.store.close();
  });
});

describe('SecretManager registrations (definitions added in code)', () => {
  it('generates a built-in definition once, keeps it across config changes and restarts, and lets the CLI set it', async () => {
    const file = newDataFile();
    const server = await boot(file);
    await server.manager.apply([app('k')]);
    await server.manager.register({ name: 'builtin', username: 'builtin-user', lifetime: 'builtin' });
    const row = (await secretRows(server.store, 'apikey')).get('builtin');
    expect(row).toMatchObject({ source: 'generated', builtin: true });
    expect(server.book.current('builtin')?.auth.username).toBe('builtin-user');
    await server.manager.apply([]);
    expect(server.book.current('builtin')?.hash).toBe(row?.secret_hash);
    expect((await secretRows(server.store, 'apikey')).has('builtin')).toBe(true);
    await server.manager.setHash('builtin', await hashSecret('known-now'), null);
    await server.store.close();

    const restarted = await boot(file);
    // The first config applies before the plugin registering it runs: the stored row must survive that.
    await restarted.manager.apply([]);
    await restarted.manager.register({ name: 'builtin', username: 'builtin-user', lifetime: 'builtin' });
    expect(await restarted.accepts('known-now', 'builtin')).toBe(true);
    await restarted.store.close();
  });

  it('holds an ephemeral definition in memory only, and refuses to store a secret for it', async () => {
    const file = newDataFile();
    const server = await boot(file);
    await server.manager.apply([]);
    await server.manager.register({ name: 'demo', lifetime: 'ephemeral', password: 'demo-pass' });
    await server.manager.register({ name: 'demo', lifetime: 'ephemeral', password: 'ignored: idempotent' });
    expect(await server.accepts('demo-pass', 'demo')).toBe(true);
    expect((await secretRows(server.store, 'apikey')).has('demo')).toBe(false);
    await expect(server.manager.setHash('demo', await hashSecret('x'), null)).rejects.toThrow(/in memory only/);
    await server.store.close();

    const restarted = await boot(file);
    await restarted.manager.apply([]);
    expect(restarted.book.current('demo')).toBeUndefined();
    await restarted.store.close();
  });
});
