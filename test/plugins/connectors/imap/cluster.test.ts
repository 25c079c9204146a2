import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, startCli, type CliServer } from '../../../helpers/cli.ts';
import { testServers } from '../../../helpers/servers.ts';
import { PG_SCHEMA_PREFIX, dropPgSchemas, pgSchemaUrl } from '../../../helpers/store.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { startObserved, type ObservedKernel } from '../../observe/support.ts';
import { channel, mail, Mailbox, Recorder, REPORTER } from './support.ts';

/**
 * One channel_imap on two nodes sharing a PostgreSQL store: one node at a time works it (the
 * lease), each mail runs once, and when the holder stops (or is killed -9) the other takes over
 * without losing or doubling a mail.
 */
const SUITE = `${PG_SCHEMA_PREFIX}imap_cluster_`;
const rec = new Recorder<{ channel: string; subject: string }>();

beforeAll(async () => {
  await testServers();
  await rec.start();
}, 60_000);

afterAll(async () => {
  await rec.close();
  await dropPgSchemas(SUITE);
});

function config(storeUrl: string, user: string): string {
  return [
    'server:',
    `  store: "${storeUrl}"`,
    'plugins:',
    '  nodes: { config: { heartbeat_ms: 200, down_after_ms: 1000 } }',
    'outgoing_rest:',
    `  - ${rec.outgoing()}`,
    'channel_imap:',
    `  - ${channel(user, { name: 'shared-in', lease_ms: 1500, poll_interval_ms: 500, ready_check: true })}`,
    '',
  ].join('\n');
}

interface ReadyBody {
  status: string;
  node: { id: string; name: string };
  connections: Array<{ name: string; state: string; ready_check: boolean; reason?: string }>;
}

async function ready(admin: string): Promise<ReadyBody & { http: number }> {
  const r = await fetch(`${admin}/ready`);
  return { ...((await r.json()) as ReadyBody), http: r.status };
}

/** Subjects of `prefix` the recorder heard, each with how often it ran. */
function runs(prefix: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of rec.got) if (r.subject.startsWith(prefix)) m.set(r.subject, (m.get(r.subject) ?? 0) + 1);
  return m;
}

async function expectEachOnce(prefix: string, n: number): Promise<void> {
  await waitFor(`${n} mails '${prefix}*' to run`, () => runs(prefix).size >= n, 30_000);
  // A second run would come at the next round: give both nodes a few rounds to show one.
  await new Promise((r) => setTimeout(r, 1_500));
  const seen = runs(prefix);
  expect(seen.size).toBe(n);
  expect([...seen.entries()].filter(([, count]) => count !== 1)).toEqual([]);
}

describe('channel_imap on two nodes (PostgreSQL store)', () => {
  it('one node works the channel, the other stands by (ready, not counted down); each mail runs once; a stopped holder is taken over mid-stream', async () => {
    const box = await new Mailbox('cluster').open();
    const text = config(await pgSchemaUrl(`${SUITE}stop`), box.user);
    const a = await startObserved({ config: text, services: { 'reporter.ts': REPORTER }, env: { SVC_NODE_NAME: 'node-a' } });
    let b: ObservedKernel | undefined;
    try {
      await waitFor('node A to hold the channel', async () => (await ready(a.admin)).connections[0]?.state === 'up');
      b = await startObserved({ config: text, services: { 'reporter.ts': REPORTER }, env: { SVC_NODE_NAME: 'node-b' } });
      const standby = await waitFor('node B to stand by', async () => {
        const r = await ready(b!.admin);
        return r.connections[0]?.reason?.startsWith('standby') && r;
      });
      expect(standby).toMatchObject({ http: 200, status: 'ready', connections: [{ name: 'shared-in', state: 'idle', ready_check: false, reason: 'standby: node node-a works this channel' }] });

      for (let i = 0; i < 20; i++) await box.append(mail({ subject: `first-${i}` }));
      await expectEachOnce('first-', 20);
      expect((await ready(b.admin)).connections[0]?.state).toBe('idle');

      // Node A stops while mails keep coming: it finishes the one it runs and hands the channel over.
      const appending = (async () => {
        for (let i = 0; i < 20; i++) {
          await box.append(mail({ subject: `second-${i}` }));
          await new Promise((r) => setTimeout(r, 30));
        }
      })();
      await waitFor('node A to run some of the second mails', () => runs('second-').size >= 3);
      await a.close();
      await appending;
      await expectEachOnce('second-', 20);
      expect(await ready(b.admin)).toMatchObject({ connections: [{ name: 'shared-in', state: 'up', ready_check: true }], node: { name: 'node-b' } });
    } finally {
      await a.close().catch(() => undefined);
      await b?.close();
      await box.close();
    }
  }, 90_000);

  it('a holder killed -9: the other node takes the channel over once it is listed down, and runs the mails that came meanwhile once', async () => {
    const box = await new Mailbox('cluster-kill').open();
    const text = config(await pgSchemaUrl(`${SUITE}kill`), box.user);
    let a: CliServer | undefined;
    let b: ObservedKernel | undefined;
    try {
      a = await startCli(makeProject(text, { 'reporter.ts': REPORTER }), { SVC_NODE_NAME: 'node-a' });
      await box.append(mail({ subject: 'kill-before' }));
      await expectEachOnce('kill-before', 1);
      b = await startObserved({ config: text, services: { 'reporter.ts': REPORTER }, env: { SVC_NODE_NAME: 'node-b' } });
      await waitFor('node B to stand by', async () => (await ready(b!.admin)).connections[0]?.reason?.startsWith('standby'));

      a.proc.kill('SIGKILL');
      await new Promise((r) => a!.proc.once('exit', r));
      for (let i = 0; i < 10; i++) await box.append(mail({ subject: `kill-after-${i}` }));
      await expectEachOnce('kill-after-', 10);
      expect(runs('kill-before').get('kill-before')).toBe(1);
      expect((await ready(b.admin)).connections[0]).toMatchObject({ state: 'up' });
    } finally {
      if (a && a.proc.exitCode === null) a.proc.kill('SIGKILL');
      await b?.close();
      await box.close();
    }
  }, 90_000);
});
