import { rmSync } from 'node:fs';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { makeProject, startCli, type CliServer } from '../../../helpers/cli.ts';
import { PG_SCHEMA_PREFIX, dropPgSchemas, pgSchemaUrl } from '../../../helpers/store.ts';
import type { Upstream } from '../../outgoing/rest/upstream.ts';
import { batchConfig as config, dropAll, FILES, leftInFolder, slowCounter, tally, until } from './batch.ts';
import { RECORD, tmpFolder } from './support.ts';

/**
 * Two nodes polling one folder on one PostgreSQL store: each file runs once, and when one node
 * is killed -9 mid-batch the survivor takes over its claims once it is no longer live
 * (cluster.node, down after 1 s here). Each node posts to its own counting upstream, so the
 * figures say how the files split between the nodes.
 */
const SUITE = `${PG_SCHEMA_PREFIX}file_pickup_cluster_`;
// A node is down 1 s after its last heartbeat in the kill test; 5 s with both up, so that a heartbeat late on a loaded machine does not look like a death (its claims would be taken over and run twice).
const HEAD = (store: string, downAfterMs: number) => `server:\n  store: "${store}"\nplugins:\n  nodes: { config: { heartbeat_ms: 200, down_after_ms: ${downAfterMs} } }\n`;
const takeovers = (nodes: CliServer[]) => nodes.map((n) => n.output().split('taking over a file whose node stopped').length - 1);
const cleanup: Array<() => Promise<unknown> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});
afterAll(() => dropPgSchemas(SUITE));

async function twoNodes(folder: string, store: string, downAfterMs: number, holdB = { on: false }): Promise<{ nodes: CliServer[]; ups: Upstream[] }> {
  const nodes: CliServer[] = [];
  const ups: Upstream[] = [];
  for (const name of ['a', 'b']) {
    const up = await slowCounter(cleanup, name === 'b' ? holdB : undefined);
    const project = makeProject(config(up, folder, HEAD(store, downAfterMs)), { 'record.ts': RECORD });
    cleanup.push(() => rmSync(project, { recursive: true, force: true }));
    nodes.push(await startCli(project, { SVC_NODE_NAME: `node-${name}` }));
    ups.push(up);
  }
  cleanup.push(async () => Promise.all(nodes.map((n) => (n.proc.exitCode === null && n.proc.signalCode === null ? n.stop('SIGTERM') : undefined))));
  return { nodes, ups };
}

/** Claims a node (by name) holds in state running: its runs a kill cuts. */
async function runningClaims(store: string, node: string): Promise<number> {
  const client = new pg.Client({ connectionString: store });
  await client.connect();
  try {
    const r = await client.query("SELECT count(*)::int AS n FROM file_pickup_claim c JOIN svc_node n ON n.id = c.node WHERE c.state = 'running' AND n.name = $1", [node]);
    return (r.rows[0] as { n: number }).n;
  } finally {
    await client.end();
  }
}

describe('channel_file exactly once on two nodes (PostgreSQL)', () => {
  it(`runs ${FILES} files each once with two nodes polling one folder`, async () => {
    const folder = tmpFolder('cluster');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
    const { nodes, ups } = await twoNodes(folder, await pgSchemaUrl(`${SUITE}${Date.now()}`), 5_000);
    dropAll(folder);
    await until(() => tally(ups, folder).moved === FILES, 60_000, 'every file moved');
    const t = tally(ups, folder);
    console.log(`file pickup, ${FILES} files, two nodes on PostgreSQL (split: runs on node-a, node-b; claims taken over: ${JSON.stringify(takeovers(nodes))}): ${JSON.stringify(t)}`);
    expect(t).toMatchObject({ misses: 0, doubles: 0, moved: FILES });
    expect(t.split!.reduce((a, b) => a + b)).toBe(FILES);
  });

  it(`takes over the claims of a node killed -9 mid-batch once it is no longer live`, async () => {
    const folder = tmpFolder('cluster-kill');
    cleanup.push(() => rmSync(folder, { recursive: true, force: true }));
    const store = await pgSchemaUrl(`${SUITE}kill-${Date.now()}`);
    const holdB = { on: false };
    const { nodes, ups } = await twoNodes(folder, store, 1_000, holdB);
    dropAll(folder);
    // Killed once both nodes ran some and the batch is under way, at a moment node-b holds running
    // claims: its upstream stops answering first, so its runs in flight stay under way until the kill
    // (a run that ends in the moment before the kill would leave nothing to take over).
    await until(() => ups[1]!.hits('/hit').length >= 10 && tally(ups, folder).runs >= FILES / 3, 30_000, 'both nodes running the batch');
    holdB.on = true;
    // A run node-b started before the hold ends within 20 ms and may end before the kill: wait for
    // one its upstream received after the hold (held unanswered, its claim running until the kill).
    const hitsAtHold = ups[1]!.hits('/hit').length;
    await until(async () => ups[1]!.hits('/hit').length > hitsAtHold && (await runningClaims(store, 'node-b')) > 0, 30_000, 'node-b running a held file');
    await nodes[1]!.stop('SIGKILL');
    const killedAt = Date.now();
    const atKill = tally(ups, folder);
    const cut = await runningClaims(store, 'node-b');
    await until(() => tally(ups, folder).moved === FILES, 60_000, 'every file moved');
    const t = tally(ups, folder);
    console.log(
      `file pickup, ${FILES} files, two nodes on PostgreSQL, node-b killed -9 after ${atKill.runs} runs (split then ${JSON.stringify(atKill.split)}), ${cut} claims running on node-b, ${takeovers(nodes)[0]} taken over by node-a; all moved ${Date.now() - killedAt} ms after the kill: ${JSON.stringify(t)}`,
    );
    expect(cut).toBeGreaterThan(0);
    expect(t.misses).toBe(0);
    expect(t.moved).toBe(FILES);
    expect(leftInFolder(folder)).toBe(0);
    expect(t.doubles).toBeLessThanOrEqual(cut);
    // The survivor did the rest: node-b ran nothing after its kill.
    expect(ups[1]!.hits('/hit').length).toBe(atKill.split![1]);
  });
});
