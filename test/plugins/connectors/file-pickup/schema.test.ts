import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { makeProject, runCli } from '../../../helpers/cli.ts';
import { configIssues } from '../../../helpers/config.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import { checkRelative } from '../../../../plugins/connectors/file-pickup/local-folder.ts';
import { globToRegExp } from '../../../../plugins/connectors/file-pickup/schema.ts';
import { RECORD } from './support.ts';

const plugins = [
  (await import('../../../../plugins/connectors/file-pickup/plugin.ts')).default,
  (await import('../../../../plugins/formats/json/plugin.ts')).default,
  (await import('../../../../plugins/formats/none/plugin.ts')).default,
];

const issuesOf = (yaml: string) => configIssues(yaml, plugins);
const ch = (extra: string) => issuesOf(`channel_file:\n  - { name: in, source: { local: { path: /srv/in } }, service: s${extra} }\n`);

describe('channel_file schema', () => {
  it('fills defaults', () => {
    const cfg = validate(readSource('channel_file:\n  - { name: in, source: { local: { path: /srv/in } }, service: s }\n', {}), plugins, {});
    expect(cfg.channel_file[0]).toMatchObject({
      pattern: '*',
      recursive: false,
      poll: { every: '30s' },
      stable: { polls: 2 },
      done_folder: 'done',
      delete: false,
      error_folder: 'error',
      max_file_bytes: 64 * 1024 * 1024,
      data_format: 'none',
      delivery: { use_queue: false, max_attempts: 5 },
      max_files_per_poll: 1000,
      concurrency: 4,
      ready_check: false,
    });
  });

  it('refuses a source that is neither or both, a poll without a time, stable with both', () => {
    expect(issuesOf('channel_file:\n  - { name: in, source: {}, service: s }\n')[0]).toMatch(/source: give local or sftp/);
    expect(issuesOf('channel_file:\n  - { name: in, source: { local: { path: /a }, sftp: { connection: c, path: b } }, service: s }\n')[0]).toMatch(/source: give local or sftp/);
    expect(ch(', poll: {}')[0]).toMatch(/poll: give every, cron or both/);
    expect(ch(', stable: { polls: 2, marker: .ok }')[0]).toMatch(/stable: give polls or marker, not both/);
    expect(ch(', stable: { marker: a/b }')[0]).toMatch(/marker: a suffix/);
  });

  it('refuses a poll schedule the scheduler could not read, at config time', () => {
    expect(ch(", poll: { every: '5 minutes' }")).toEqual([expect.stringMatching(/^channel_file\[0\]\.poll\.every: '5 minutes' is not a duration: write it like 30s, 5m/)]);
    expect(ch(', poll: { every: 0s }')[0]).toMatch(/^channel_file\[0\]\.poll\.every: an interval must be at least 1 ms/);
    expect(ch(", poll: { cron: '61 * * * *' }")[0]).toMatch(/^channel_file\[0\]\.poll\.cron: .*minute/);
    expect(ch(", poll: { cron: 'every day' }")[0]).toMatch(/^channel_file\[0\]\.poll\.cron: /);
    expect(ch(", poll: { cron: '0 2 * * *', timezone: Mars/Olympus }")[0]).toMatch(/^channel_file\[0\]\.poll\.timezone: not an IANA time zone/);
    expect(ch(", poll: { every: 1h30m, cron: '*/5 1-6 * * MON-FRI', timezone: Europe/Berlin }")).toEqual([]);
    expect(ch(', poll: { every: 250 }')).toEqual([]);
  });

  it('svc check exits 2 on a bad poll schedule, naming its path', () => {
    const project = makeProject(`channel_file:\n  - { name: in, source: { local: { path: /srv/in } }, service: record, poll: { every: 5 minutes, cron: '0 25 * * *' } }\n`, { 'record.ts': RECORD });
    try {
      const r = runCli(['check', 'config/svc.yaml'], project);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain("config error: channel_file[0].poll.every: '5 minutes' is not a duration");
      expect(r.stderr).toMatch(/config error: channel_file\[0\]\.poll\.cron: .*hour/);
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it('checks names, connections, formats and folders against the rest of the config', () => {
    expect(issuesOf('channel_file:\n  - { name: in, source: { local: { path: /a } }, service: s }\n  - { name: in, source: { local: { path: /b } }, service: s }\n')[0]).toMatch(/duplicate name 'in'/);
    expect(issuesOf('channel_file:\n  - { name: in, source: { sftp: { connection: partner, path: out } }, service: s }\n')[0]).toMatch(/no sftp_connection named 'partner'/);
    expect(ch(', data_format: hl7')[0]).toMatch(/data_format: no enabled plugin decodes messages of data_format 'hl7'/);
    expect(ch(', xml: {}')[0]).toMatch(/xml settings apply only to data_format: xml/);
    expect(ch(', done_folder: ../out')[0]).toMatch(/done_folder: must be a folder inside the source folder/);
    expect(ch(', error_folder: /tmp')[0]).toMatch(/error_folder: must be a folder inside the source folder/);
    expect(ch(', error_folder: done')[0]).toMatch(/error_folder: must differ from done_folder/);
    expect(ch('')).toEqual([]);
  });

  it('needs the scheduler (it times polls) and the Use queue (dead letters)', () => {
    expect(issuesOf('plugins: { scheduler: false }\nchannel_file:\n  - { name: in, source: { local: { path: /a } }, service: s }\n').join('\n')).toMatch(/poll: polls are timed by the scheduler plugin, which is off/);
    expect(issuesOf('plugins: { use-queue: false }\nchannel_file:\n  - { name: in, source: { local: { path: /a } }, service: s }\n').join('\n')).toMatch(/the use-queue plugin is off/);
  });

  it('matches globs on names, and refuses paths that leave the folder', () => {
    expect(globToRegExp('*.csv').test('a.csv')).toBe(true);
    expect(globToRegExp('*.csv').test('a.csv.ok')).toBe(false);
    expect(globToRegExp('[Oo]rder-??.xml').test('order-12.xml')).toBe(true);
    expect(globToRegExp('[!a]*').test('abc')).toBe(false);
    expect(globToRegExp('a+b(1).txt').test('a+b(1).txt')).toBe(true);
    expect(checkRelative('sub/./a.csv')).toBe('sub/a.csv');
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a\u0000b', 'a\\b', 'x\n']) expect(() => checkRelative(bad)).toThrow(/would leave the folder/);
  });
});
