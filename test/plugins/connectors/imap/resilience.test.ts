import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { testServers } from '../../../helpers/servers.ts';
import { waitFor } from '../../../helpers/wait.ts';
import { channel, kick, mail, Mailbox, Recorder, REPORTER } from './support.ts';

/** Restarts, a renumbered mailbox, the server dropping the connection, shutdown: nothing run twice, nothing lost. */
const rec = new Recorder<{ channel: string; subject: string }>();
const restart = new Mailbox('restart');
const renumber = new Mailbox('renumber');
const dropped = new Mailbox('dropped');
let k: TestKernel | undefined;
let dir: string | undefined;
const logs: Array<Record<string, unknown>> = [];

const config = () => `
outgoing_rest:
  - ${rec.outgoing()}
channel_imap:
  - ${channel(restart.user, { name: 'restart-in' })}
  - ${channel(renumber.user, { name: 'renumber-in', mailbox: 'Orders' })}
  - ${channel(dropped.user, { name: 'dropped-in', poll_interval_ms: 300 })}
`;

async function start(): Promise<TestKernel> {
  k = await startKernel({ config: config(), services: { 'reporter.ts': REPORTER }, logs, ...(dir ? { dir } : {}) });
  dir = k.dir;
  return k;
}

beforeAll(async () => {
  await testServers();
  await rec.start();
  for (const b of [restart, renumber, dropped]) await b.open();
  await renumber.create('Orders');
  await start();
}, 60_000);

afterAll(async () => {
  await k?.close();
  for (const b of [restart, renumber, dropped]) await b.close();
  await rec.close();
});

const runs = (ch: string, subject: string) => rec.got.filter((r) => r.channel === ch && r.subject === subject).length;
const ran = (ch: string, subject: string) => waitFor(`'${subject}' run on ${ch}`, () => runs(ch, subject) >= 1, 15_000);
const seenAll = (b: Mailbox, folder = 'INBOX') => waitFor(`every mail in ${folder} seen`, async () => (await b.list(folder)).every((m) => m.seen));

describe('channel_imap across restarts and connection losses', () => {
  it('after a restart runs only the mails that came while svc was down, each once', async () => {
    await restart.append(mail({ subject: 'before' }));
    await ran('restart-in', 'before');
    await seenAll(restart);
    await k!.close();
    await restart.append(mail({ subject: 'while-down-1' }));
    await restart.append(mail({ subject: 'while-down-2' }));
    await start();
    await ran('restart-in', 'while-down-1');
    await ran('restart-in', 'while-down-2');
    await seenAll(restart);
    await restart.append(mail({ subject: 'after' }));
    await ran('restart-in', 'after');
    expect(['before', 'while-down-1', 'while-down-2', 'after'].map((s) => runs('restart-in', s))).toEqual([1, 1, 1, 1]);
  });

  it('a renumbered mailbox (UIDVALIDITY changed): its unseen mails are new, seen ones are not run', async () => {
    await renumber.append(mail({ subject: 'first-life' }), 'Orders');
    await ran('renumber-in', 'first-life');
    await seenAll(renumber, 'Orders');
    await k!.close();
    await renumber.remove('Orders');
    await renumber.create('Orders');
    await renumber.append(mail({ subject: 'already-read' }), 'Orders', ['\\Seen']);
    await renumber.append(mail({ subject: 'second-life' }), 'Orders');
    await start();
    await ran('renumber-in', 'second-life');
    await renumber.append(mail({ subject: 'later' }), 'Orders');
    await ran('renumber-in', 'later');
    expect(runs('renumber-in', 'already-read')).toBe(0);
    expect(runs('renumber-in', 'first-life')).toBe(1);
    expect(logs.some((l) => String(l.msg).includes('renumbered'))).toBe(true);
  });

  it('the server dropping the connection while a service runs: the run counts, the mail is flagged after the reconnect, never run again', async () => {
    let open!: () => void;
    rec.gate = new Promise<void>((r) => (open = r));
    await dropped.append(mail({ subject: 'in-flight' }));
    await ran('dropped-in', 'in-flight');
    kick(dropped.user);
    open();
    await dropped.reopen();
    rec.gate = undefined;
    await seenAll(dropped);
    expect((await dropped.list()).length).toBe(1);
    await dropped.append(mail({ subject: 'after-drop' }));
    await ran('dropped-in', 'after-drop');
    await seenAll(dropped);
    expect(runs('dropped-in', 'in-flight')).toBe(1);
    expect(runs('dropped-in', 'after-drop')).toBe(1);
    expect(logs.some((l) => l.channel === 'dropped-in' && String(l.msg).includes('reconnecting'))).toBe(true);
  });

  it('shutdown while a service runs: the run finishes and is recorded; the next start does not run it again', async () => {
    let open!: () => void;
    rec.gate = new Promise<void>((r) => (open = r));
    await restart.append(mail({ subject: 'at-shutdown' }));
    await ran('restart-in', 'at-shutdown');
    const closing = k!.close();
    setTimeout(() => open(), 200);
    await closing;
    rec.gate = undefined;
    await start();
    await restart.append(mail({ subject: 'after-shutdown' }));
    await ran('restart-in', 'after-shutdown');
    await seenAll(restart);
    expect(runs('restart-in', 'at-shutdown')).toBe(1);
  });
});
