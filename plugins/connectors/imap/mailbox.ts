import type { ImapFlow } from 'imapflow';
import type { PendingAction } from './store.ts';

/**
 * What the channel asks of the selected mailbox, one function per IMAP exchange, so the channel
 * reads as its steps. Every call takes UIDs (never sequence numbers, which shift as others
 * expunge).
 */

/** Creates a folder unless it exists (error_folder, after_success.folder). */
export async function ensureFolder(client: ImapFlow, folder: string): Promise<void> {
  const list = await client.list();
  if (list.some((m) => m.path === folder)) return;
  await client.mailboxCreate(folder);
}

/**
 * UIDs that are new, ascending: above both last_uid and the baseline, and, at or below the
 * baseline (messages there when this UIDVALIDITY was first met), the unseen ones above last_uid.
 * `n:*` always names the highest message even when its UID is below n, hence the filter.
 */
export async function newUids(client: ImapFlow, mark: { lastUid: number; baselineUid: number }): Promise<number[]> {
  const above = Math.max(mark.lastUid, mark.baselineUid);
  const fresh = ((await client.search({ uid: `${above + 1}:*` }, { uid: true })) || []).filter((u) => u > above);
  let older: number[] = [];
  if (mark.lastUid < mark.baselineUid) {
    older = ((await client.search({ uid: `${mark.lastUid + 1}:${mark.baselineUid}`, seen: false }, { uid: true })) || []).filter((u) => u > mark.lastUid && u <= mark.baselineUid);
  }
  return [...older, ...fresh].sort((a, b) => a - b);
}

/** Sizes of the given messages as the server reports them (RFC822.SIZE), by UID; a UID missing is gone. */
export async function sizes(client: ImapFlow, uids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (uids.length === 0) return out;
  for (const m of await client.fetchAll(uids.join(','), { uid: true, size: true }, { uid: true })) out.set(m.uid, m.size ?? 0);
  return out;
}

/** The whole message; undefined when it is gone (expunged meanwhile). */
export async function download(client: ImapFlow, uid: number): Promise<Buffer | undefined> {
  const m = await client.fetchOne(String(uid), { source: true }, { uid: true });
  return m ? m.source : undefined;
}

/** The header block only (a message too large to download). */
export async function headerBlock(client: ImapFlow, uid: number): Promise<Buffer> {
  const m = await client.fetchOne(String(uid), { headers: true }, { uid: true });
  return (m && m.headers) || Buffer.alloc(0);
}

/**
 * Does what svc decided for a message on the server; throws when the server refused it or the
 * connection went (imapflow answers false then). A message already gone (moved or deleted by
 * someone else) counts as done: UID commands on missing UIDs succeed, nothing is left to do.
 */
export async function applyAction(client: ImapFlow, p: PendingAction): Promise<void> {
  const uid = String(p.uid);
  let ok: unknown;
  if (p.action === 'seen') ok = await client.messageFlagsAdd(uid, ['\\Seen'], { uid: true });
  else if (p.action === 'delete') ok = await client.messageDelete(uid, { uid: true });
  else ok = await client.messageMove(uid, p.folder as string, { uid: true });
  if (ok === false || ok === undefined) throw new Error(`the server did not ${p.action === 'move' ? `move message ${p.uid} to ${p.folder}` : `${p.action === 'seen' ? 'flag' : 'delete'} message ${p.uid}`}`);
}
