import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../../kernel/config/store.ts';
import { startKernel } from '../../../helpers/kernel.ts';
import { makeProject, runCli } from '../../../helpers/cli.ts';
import { PG_SCHEMA_PREFIX, PG_URL, dropPgSchemas, pgAnswers, pgSchemaUrl } from '../../../helpers/store.ts';
import { startObserved } from '../../observe/support.ts';

/**
 * Selecting PostgreSQL (`server.store`, SVC_STORE), starting without it, and /ready while it is
 * away. The password of a store URL must never reach a message or a log line.
 */
const pgRuns = process.env.CI === 'true' || (await pgAnswers());
if (!pgRuns) console.warn(`PostgreSQL does not answer at ${PG_URL}: the postgres store tests that need it are skipped`);
const SUITE = `${PG_SCHEMA_PREFIX}select_`;
afterAll(() => dropPgSchemas(SUITE));

const PASSWORD = 'pw-never-logged';

/** A PostgreSQL URL with a password (trust auth ignores it) through `port`, in a schema of its own. */
async function urlVia(port: number, schema: string): Promise<string> {
  const url = new URL(await pgSchemaUrl(SUITE + schema));
  url.password = PASSWORD;
  url.port = String(port);
  return url.toString();
}

/** A TCP relay to PostgreSQL that can be cut and restored: the database going away, for real. */
class Relay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  async up(): Promise<void> {
    const target = new URL(PG_URL);
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server!.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    await closed;
  }
}

describe('selecting the store', () => {
  it.skipIf(!pgRuns)('server.store with a postgres:// URL selects PostgreSQL, and SVC_STORE overrides the file', async () => {
    const url = await pgSchemaUrl(`${SUITE}file`);
    const fromFile = await startKernel({ config: `server:\n  store: ${JSON.stringify(url)}\n` });
    try {
      expect(fromFile.kernel.store.dialect).toBe('postgres');
      // The admin plugin's migrations ran there: its tables, then roles and tenants.
      expect(await fromFile.kernel.store.one("SELECT COUNT(*) AS n FROM svc_migrations WHERE owner = 'admin'")).toEqual({ n: 2 });
    } finally {
      await fromFile.close();
    }
    const overridden = await startKernel({ config: `server:\n  store: ./somewhere/svc.db\n`, env: { SVC_STORE: url.replace('postgres://', 'postgresql://') } });
    try {
      expect(overridden.kernel.store.dialect).toBe('postgres');
    } finally {
      await overridden.close();
    }
  });

  it('a postgres:// URL with the postgres plugin disabled is a config error naming server.store, without the password', async () => {
    const err = await startKernel({ config: `plugins:\n  postgres: false\nserver:\n  store: postgres://svc:${PASSWORD}@127.0.0.1/svc\n` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/^server\.store: no store for postgres:\/\/ URLs/);
    expect((err as Error).message).not.toContain(PASSWORD);
  });

  it('svc start exits 1 with a clear message when PostgreSQL does not answer, never printing the password', () => {
    const dir = makeProject(`server:\n  store: postgres://svc:${PASSWORD}@127.0.0.1:9/svc\n  port: 0\n`);
    const r = runCli(['start'], dir, undefined, { SVC_ADMIN_PORT: '0' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^error: PostgreSQL at postgres:\/\/svc:\*\*\*@127\.0\.0\.1:9\/svc did not answer: connect ECONNREFUSED/m);
    expect(r.stderr + r.stdout).not.toContain(PASSWORD);
  }, 60_000);
});

describe('readiness on PostgreSQL', () => {
  it.skipIf(!pgRuns)('is not ready while PostgreSQL is away, and ready again once it is back', async () => {
    const relay = new Relay();
    await relay.up();
    const k = await startObserved({ config: '', env: { SVC_STORE: await urlVia(relay.port, 'ready') } });
    try {
      const ready = () => fetch(`${k.admin}/ready`).then(async (r) => ({ status: r.status, body: (await r.json()) as { details?: string } }));
      expect((await ready()).status).toBe(200);
      await relay.cut();
      const away = await ready();
      expect(away.status).toBe(503);
      expect(away.body.details).toBe('Not ready: store unreachable');
      await relay.up();
      expect((await ready()).status).toBe(200);
      expect(JSON.stringify(k.logs)).not.toContain(PASSWORD);
    } finally {
      await k.close();
      await relay.cut();
    }
  });
});
