import { sqlTypes, type DataStore, type Dialect, type Migration } from '../../../sdk/plugin/index.ts';

/**
 * What the IMAP channels remember, in the kernel's data store, so that a message is run once
 * across restarts. `imap_mailbox`: per channel and mailbox (`account`: user@host:port/mailbox)
 * and UIDVALIDITY, the highest UID done with (`last_uid`) and, for a validity met for the first
 * time, the UIDs at or below `baseline_uid` that were already there: of those only the unseen
 * ones are new. `imap_pending`: a message done with in svc whose disposition on the server (flag,
 * move, delete) has not been confirmed yet; written in the same transaction that moves last_uid,
 * deleted once the server did it, retried at every round until then.
 */
export function imapMigrations(dialect: Dialect): Migration[] {
  const t = sqlTypes(dialect);
  return [
    {
      version: 1,
      up: `
        CREATE TABLE imap_mailbox (
          channel TEXT NOT NULL,
          account TEXT NOT NULL,
          uid_validity TEXT NOT NULL,
          last_uid ${t.int} NOT NULL,
          baseline_uid ${t.int} NOT NULL,
          updated_at ${t.int} NOT NULL,
          PRIMARY KEY (channel, account, uid_validity)
        );
        CREATE TABLE imap_pending (
          channel TEXT NOT NULL,
          account TEXT NOT NULL,
          uid_validity TEXT NOT NULL,
          uid ${t.int} NOT NULL,
          action TEXT NOT NULL,
          folder TEXT,
          created_at ${t.int} NOT NULL,
          PRIMARY KEY (channel, account, uid_validity, uid)
        )`,
    },
    {
      // One row per channel: the node working it now and until when (see lease.ts).
      version: 2,
      up: `
        CREATE TABLE imap_lease (
          channel TEXT PRIMARY KEY,
          holder TEXT NOT NULL,
          holder_name TEXT NOT NULL,
          expires_at ${t.int} NOT NULL
        )`,
    },
  ];
}

/** The mailbox's place: UIDs above last_uid are new; at or below baseline_uid only when unseen. */
export interface MailboxMark {
  lastUid: number;
  baselineUid: number;
}

/** What the server still has to do to a message svc is done with. */
export interface PendingAction {
  uid: number;
  action: 'seen' | 'move' | 'delete';
  folder: string | null;
}

/** One channel's mailbox at one UIDVALIDITY. */
export interface MailboxKey {
  channel: string;
  account: string;
  uidValidity: string;
}

/** Who works a channel now: a node id (and its name, for /ready), until `expires_at` (ms since the epoch). */
export interface LeaseRow {
  holder: string;
  holder_name: string;
  expires_at: number;
}

export class ImapTables {
  private constructor(private readonly store: DataStore) {}

  static async open(store: DataStore): Promise<ImapTables> {
    await store.migrate('imap', imapMigrations(store.dialect));
    return new ImapTables(store);
  }

  /**
   * The mark of this validity; created at first sight with every message now in the mailbox
   * (UIDs below `uidNext`) as the baseline. Returns whether it is new and whether an older
   * validity of the same mailbox was known (the server renumbered it).
   */
  async mark(key: MailboxKey, uidNext: number, now: number): Promise<MailboxMark & { created: boolean; renumbered: boolean }> {
    const args = [key.channel, key.account, key.uidValidity];
    const row = await this.store.one<{ last_uid: number; baseline_uid: number }>('SELECT last_uid, baseline_uid FROM imap_mailbox WHERE channel = ? AND account = ? AND uid_validity = ?', args);
    if (row) return { lastUid: row.last_uid, baselineUid: row.baseline_uid, created: false, renumbered: false };
    const older = await this.store.one<{ n: number }>('SELECT COUNT(*) AS n FROM imap_mailbox WHERE channel = ? AND account = ?', [key.channel, key.account]);
    const baselineUid = Math.max(0, uidNext - 1);
    await this.store.transaction(
      async (tx) => {
        await tx.run('INSERT INTO imap_mailbox (channel, account, uid_validity, last_uid, baseline_uid, updated_at) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (channel, account, uid_validity) DO NOTHING', [...args, baselineUid, now]);
        // Actions on UIDs of an older validity cannot be done any more: those UIDs name nothing now.
        await tx.run('DELETE FROM imap_pending WHERE channel = ? AND account = ? AND uid_validity <> ?', args);
      },
      { durable: true },
    );
    return { lastUid: 0, baselineUid, created: true, renumbered: Number(older?.n ?? 0) > 0 };
  }

  /**
   * Records a message as done with in svc: last_uid moves up to it and its server action is
   * pending, both or neither, durably, before the server is told anything.
   */
  async done(key: MailboxKey, pending: PendingAction, now: number): Promise<void> {
    await this.store.transaction(
      async (tx) => {
        await tx.run('UPDATE imap_mailbox SET last_uid = ?, updated_at = ? WHERE channel = ? AND account = ? AND uid_validity = ? AND last_uid < ?', [pending.uid, now, key.channel, key.account, key.uidValidity, pending.uid]);
        await tx.run(
          'INSERT INTO imap_pending (channel, account, uid_validity, uid, action, folder, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel, account, uid_validity, uid) DO UPDATE SET action = excluded.action, folder = excluded.folder',
          [key.channel, key.account, key.uidValidity, pending.uid, pending.action, pending.folder, now],
        );
      },
      { durable: true },
    );
  }

  async pending(key: MailboxKey): Promise<PendingAction[]> {
    return this.store.all<PendingAction>('SELECT uid, action, folder FROM imap_pending WHERE channel = ? AND account = ? AND uid_validity = ? ORDER BY uid', [key.channel, key.account, key.uidValidity]);
  }

  async settled(key: MailboxKey, uid: number): Promise<void> {
    await this.store.run('DELETE FROM imap_pending WHERE channel = ? AND account = ? AND uid_validity = ? AND uid = ?', [key.channel, key.account, key.uidValidity, uid]);
  }

  async lease(channel: string): Promise<LeaseRow | undefined> {
    const row = await this.store.one<LeaseRow>('SELECT holder, holder_name, expires_at FROM imap_lease WHERE channel = ?', [channel]);
    return row && { holder: row.holder, holder_name: row.holder_name, expires_at: Number(row.expires_at) };
  }

  /**
   * Compare-and-set: writes `next` when the row is still `seen` (or, seen none, there is still
   * none). True when this call wrote it: of two nodes claiming at once, one wins.
   */
  async claimLease(channel: string, seen: LeaseRow | undefined, next: LeaseRow): Promise<boolean> {
    const r = seen
      ? await this.store.run('UPDATE imap_lease SET holder = ?, holder_name = ?, expires_at = ? WHERE channel = ? AND holder = ? AND expires_at = ?', [next.holder, next.holder_name, next.expires_at, channel, seen.holder, seen.expires_at])
      : await this.store.run('INSERT INTO imap_lease (channel, holder, holder_name, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT (channel) DO NOTHING', [channel, next.holder, next.holder_name, next.expires_at]);
    return r.changes === 1;
  }

  async releaseLease(channel: string, holder: string): Promise<void> {
    await this.store.run('DELETE FROM imap_lease WHERE channel = ? AND holder = ?', [channel, holder]);
  }
}
