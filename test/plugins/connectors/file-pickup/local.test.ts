import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import type { Upstream } from '../../outgoing/rest/upstream.ts';
import { counter, deadLetters, drop, heard, outgoingCounter, poll, RECORD, tmpFolder } from './support.ts';

/** channel_file on local folders: pattern, stability, markers, done/error folders, dead letters, safety. Polls are driven by the file.poll control op (the schedule is an hour). */
const CHANNELS = ['basic', 'stable', 'marker', 'json', 'fail', 'big', 'safe', 'queued', 'stuck', 'tree', 'csv'] as const;
const dirs = Object.fromEntries(CHANNELS.map((c) => [c, tmpFolder(c)])) as Record<(typeof CHANNELS)[number], string>;
const outside = tmpFolder('outside');

const channel = (name: (typeof CHANNELS)[number], extra: Record<string, unknown> = {}) =>
  `  - ${JSON.stringify({ name, source: { local: { path: dirs[name] } }, service: 'record', poll: { every: '1h' }, stable: { polls: 1 }, delivery: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10 }, ...extra })}`;

let k: TestKernel;
let up: Upstream;
const ran = (path: string) => heard(up).filter((h) => h.source.name === path.split(':')[0] && h.path === path.split(':')[1]);

beforeAll(async () => {
  up = await counter();
  const config = [
    outgoingCounter(up),
    'channel_file:',
    channel('basic', { pattern: ['*.csv', '*.txt'] }),
    channel('stable', { stable: { polls: 2 } }),
    channel('marker', { stable: { marker: '.ok' } }),
    channel('json', { data_format: 'json' }),
    channel('fail'),
    channel('big', { max_file_bytes: 1000 }),
    channel('safe', { pattern: '*.csv' }),
    channel('queued', { data_format: 'json', delivery: { use_queue: true, max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10 } }),
    channel('stuck'),
    channel('tree', { recursive: true, pattern: '*.csv' }),
    channel('csv', { data_format: 'csv', csv: { delimiter: ';' } }),
  ].join('\n');
  k = await startKernel({ config, services: { 'record.ts': RECORD } });
});

afterAll(async () => {
  await k?.close();
  await up?.close();
  for (const d of [...Object.values(dirs), outside]) rmSync(d, { recursive: true, force: true });
});

describe('channel_file (local folder)', () => {
  it('runs the service once per matching file with its name, size, time and bytes, then moves it to done', async () => {
    const d = dirs.basic;
    drop(d, 'a.csv', 'id;n\n1;2\n');
    drop(d, 'b.txt', 'hello');
    drop(d, 'c.xml', '<x/>');
    expect(await poll(k, 'basic')).toMatchObject({ listed: 2, taken: 2 });
    const a = ran('basic:a.csv');
    expect(a).toHaveLength(1);
    expect(a[0]).toMatchObject({ name: 'a.csv', size: '9', raw: 'id;n\n1;2\n', source: { kind: 'file', name: 'basic' } });
    expect(Date.parse(a[0]!.source.at)).toBeLessThan(Date.now() - 30_000);
    expect(readdirSync(d).sort()).toEqual(['c.xml', 'done']);
    expect(readdirSync(join(d, 'done')).sort()).toEqual(['a.csv', 'b.txt']);
    expect(await poll(k, 'basic')).toMatchObject({ listed: 0, taken: 0 });
    expect(ran('basic:a.csv')).toHaveLength(1);
  });

  it('does not take a file that grew since the last poll (stable: polls 2)', async () => {
    const d = dirs.stable;
    const path = drop(d, 'grow.csv', 'part 1\n');
    expect(await poll(k, 'stable')).toMatchObject({ listed: 0 });
    appendFileSync(path, 'part 2\n');
    expect(await poll(k, 'stable')).toMatchObject({ listed: 0 });
    expect(await poll(k, 'stable')).toMatchObject({ listed: 1, taken: 1 });
    expect(ran('stable:grow.csv').map((h) => h.raw)).toEqual(['part 1\npart 2\n']);
  });

  it('waits for the marker file (stable: marker), then removes it', async () => {
    const d = dirs.marker;
    drop(d, 'orders.csv', 'x');
    expect(await poll(k, 'marker')).toMatchObject({ listed: 0 });
    drop(d, 'orders.csv.ok', '');
    expect(await poll(k, 'marker')).toMatchObject({ listed: 1, taken: 1 });
    expect(readdirSync(d)).toEqual(['done']);
    expect(ran('marker:orders.csv')).toHaveLength(1);
  });

  it('decodes with the data_format; a file not of the format goes to error and is dead-lettered, and replays on its stored bytes', async () => {
    const d = dirs.json;
    drop(d, 'good.json', '{"id": 7}');
    drop(d, 'bad.json', '{"id": ');
    await poll(k, 'json');
    expect(ran('json:good.json')[0]!.payload).toEqual({ id: 7 });
    expect(ran('json:bad.json')).toHaveLength(0);
    expect(readdirSync(join(d, 'error'))).toEqual(['bad.json']);
    const [dead] = await deadLetters(k, 'json');
    expect(dead!.lastError).toMatchObject({ kind: 'MessageFormatError' });
    // The stored bytes are as they came: a replay runs the service on them (and fails the format again, as it should).
    const shown = (await k.kernel.runControl('queue.show', { id: dead!.id })) as { event?: { headers?: Record<string, string> } };
    expect(JSON.stringify(shown)).toContain('bad.json');
  });

  it('parses CSV files with the csv format into rows', async () => {
    drop(dirs.csv, 'orders.csv', 'id;item;qty\n1;pen;2\n2;ink;5\n');
    await poll(k, 'csv');
    expect(ran('csv:orders.csv').map((h) => h.payload)).toEqual([[{ id: '1', item: 'pen', qty: '2' }, { id: '2', item: 'ink', qty: '5' }]]);
  });

  it('moves a file whose service failed for good to error, with a dead letter that replays', async () => {
    const d = dirs.fail;
    drop(d, 'will-fail.csv', 'payload');
    expect(await poll(k, 'fail')).toMatchObject({ taken: 1 });
    expect(ran('fail:will-fail.csv')).toHaveLength(1);
    expect(readdirSync(join(d, 'error'))).toEqual(['will-fail.csv']);
    const [dead] = await deadLetters(k, 'fail');
    expect(dead!.lastError).toMatchObject({ kind: 'BadRequest', message: expect.stringContaining('refused will-fail.csv') });
    await k.kernel.runControl('queue.replay', { id: dead!.id });
    await expect.poll(() => ran('fail:will-fail.csv').length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(ran('fail:will-fail.csv')[1]!.raw).toBe('payload');
  });

  it('does not read a file over max_file_bytes: error folder and a dead letter with the reason', async () => {
    const d = dirs.big;
    drop(d, 'huge.csv', Buffer.alloc(5000, 65));
    expect(await poll(k, 'big')).toMatchObject({ taken: 1 });
    expect(ran('big:huge.csv')).toHaveLength(0);
    expect(readdirSync(join(d, 'error'))).toEqual(['huge.csv']);
    const [dead] = await deadLetters(k, 'big');
    expect(dead!.lastError).toMatchObject({ kind: 'PAYLOAD_TOO_LARGE', message: expect.stringContaining('5000 bytes, more than 1000') });
    expect(dead!.lastError!.message).toContain('not read, moved to error/huge.csv');
  });

  it('refuses to replay an oversize dead letter (it holds no content), saying how to run the file again', async () => {
    const [dead] = await deadLetters(k, 'big');
    const answer = await k.kernel.runControl('queue.replay', { id: dead!.id });
    expect(answer).toEqual({ replayed: 0, ids: [], refused: [{ id: dead!.id, reason: expect.stringContaining('raise max_file_bytes and move error/huge.csv back into the folder') }] });
    expect(await deadLetters(k, 'big')).toHaveLength(1);
    // Chosen among others (--all): still refused, and said so.
    const all = (await k.kernel.runControl('queue.replay', { all: true, channel: 'file:big' })) as { replayed: number; refused: unknown[] };
    expect(all).toMatchObject({ replayed: 0, refused: [{ id: dead!.id }] });
    await new Promise((r) => setTimeout(r, 200));
    expect(ran('big:huge.csv')).toHaveLength(0);
  });

  it('never follows a symlink nor takes a refused name; writes nothing outside the folder', async () => {
    const d = dirs.safe;
    const secret = drop(outside, 'secret.csv', 'top secret');
    symlinkSync(secret, join(d, 'link.csv'));
    drop(d, 'x..csv', 'dots');
    drop(d, 'ctl\u0001.csv', 'control');
    mkdirSync(join(d, 'sub'));
    drop(d, 'ok.csv', 'fine');
    // The done folder is a symlink out: the processed file must not land outside.
    symlinkSync(outside, join(d, 'done'));
    expect(await poll(k, 'safe')).toMatchObject({ listed: 1, taken: 1 });
    expect(ran('safe:ok.csv')).toHaveLength(1);
    expect(heard(up).filter((h) => h.source.name === 'safe').map((h) => h.path)).toEqual(['ok.csv']);
    expect(readdirSync(outside)).toEqual(['secret.csv']);
    expect(readFileSync(secret, 'utf8')).toBe('top secret');
    // Not moved (the done folder is refused), claimed done: the next poll tries the move again and never runs it again.
    expect(existsSync(join(d, 'ok.csv'))).toBe(true);
    expect(await poll(k, 'safe')).toMatchObject({ taken: 0, moved: 0 });
    expect(ran('safe:ok.csv')).toHaveLength(1);
    expect(readdirSync(d).sort()).toEqual(['ctl\u0001.csv', 'done', 'link.csv', 'ok.csv', 'sub', 'x..csv']);
  });

  it('with use_queue stores each file in the Use queue and moves it once its run settled', async () => {
    const d = dirs.queued;
    drop(d, 'q1.json', '{"n": 1}');
    drop(d, 'q-fail.json', '{"n": 2}');
    expect(await poll(k, 'queued')).toMatchObject({ taken: 2 });
    await expect.poll(() => (existsSync(join(d, 'done', 'q1.json')) && existsSync(join(d, 'error', 'q-fail.json'))), { timeout: 15_000 }).toBe(true);
    expect(ran('queued:q1.json').map((h) => h.payload)).toEqual([{ n: 1 }]);
    expect(ran('queued:q-fail.json')).toHaveLength(1);
    expect(await deadLetters(k, 'queued')).toHaveLength(1);
  });

  it('keeps a file whose move failed claimed done, and moves it at a later poll without running it again', async () => {
    const d = dirs.stuck;
    writeFileSync(join(d, 'done'), 'a file where the done folder should be');
    drop(d, 'once.csv', 'once');
    await poll(k, 'stuck');
    expect(ran('stuck:once.csv')).toHaveLength(1);
    expect(existsSync(join(d, 'once.csv'))).toBe(true);
    await poll(k, 'stuck');
    rmSync(join(d, 'done'));
    expect(await poll(k, 'stuck')).toMatchObject({ moved: 1, taken: 0 });
    expect(readdirSync(join(d, 'done'))).toEqual(['once.csv']);
    expect(ran('stuck:once.csv')).toHaveLength(1);
  });

  it('with recursive takes files in subfolders, keeps their path under done/, and never descends into done or error', async () => {
    const d = dirs.tree;
    mkdirSync(join(d, 'a', 'b'), { recursive: true });
    mkdirSync(join(d, 'error'));
    drop(d, 'top.csv', 't');
    drop(join(d, 'a', 'b'), 'deep.csv', 'd');
    drop(join(d, 'error'), 'old.csv', 'o');
    expect(await poll(k, 'tree')).toMatchObject({ listed: 2, taken: 2 });
    expect(heard(up).filter((h) => h.source.name === 'tree').map((h) => h.path).sort()).toEqual(['a/b/deep.csv', 'top.csv']);
    expect(readdirSync(join(d, 'done', 'a', 'b'))).toEqual(['deep.csv']);
    expect(await poll(k, 'tree')).toMatchObject({ listed: 0 });
  });

  it('reports each channel in /ready and /metrics', async () => {
    const reports = k.kernel.api.connections().filter((c) => c.kind === 'file');
    expect(reports.map((r) => r.name).sort()).toEqual([...CHANNELS].sort());
    const basic = reports.find((r) => r.name === 'basic')!;
    expect(basic.state).toBe('up');
    expect(basic.meter.counts.get('pickup ok')).toBe(2);
    expect(basic.meter.counts.get('poll ok')).toBeGreaterThanOrEqual(2);
  });
});
