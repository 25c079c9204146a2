import { describe, expect, it } from 'vitest';
import { configIssues } from '../../../helpers/config.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import { safeReason } from '../../../../plugins/connectors/imap/client.ts';
import { parseMail, serviceHeaders } from '../../../../plugins/connectors/imap/mail.ts';

const plugins = [(await import('../../../../plugins/connectors/imap/plugin.ts')).default, (await import('../../../../plugins/secrets/named/plugin.ts')).default];
const issuesOf = (yaml: string) => configIssues(yaml, plugins);
const ch = (extra: string) => issuesOf(`channel_imap:\n  - { name: in, host: mail, username: u, password: p, service: s${extra} }\n`);

describe('channel_imap schema', () => {
  it('fills defaults', () => {
    const cfg = validate(readSource('channel_imap:\n  - { name: in, host: mail, username: u, password: p, service: s }\n', {}), plugins, {});
    expect(cfg.channel_imap[0]).toMatchObject({
      security: 'starttls',
      mailbox: 'INBOX',
      after_success: { action: 'seen' },
      error_folder: 'svc-errors',
      idle: true,
      poll_interval_ms: 60_000,
      max_message_bytes: 25 * 1024 * 1024,
      batch: 100,
      delivery: { use_queue: false, max_attempts: 5 },
      reconnect: { min_ms: 1_000, max_ms: 60_000 },
      ready_check: false,
    });
    expect(ch('')).toEqual([]);
  });

  it('refuses what cannot work', () => {
    expect(ch(', after_success: { action: move }')[0]).toMatch(/after_success\.folder: action: move needs a folder/);
    expect(ch(', after_success: { action: seen, folder: Done }')[0]).toMatch(/folder applies only to action: move/);
    expect(ch(', after_success: { action: move, folder: INBOX }')[0]).toMatch(/must differ from mailbox/);
    expect(ch(', error_folder: INBOX')[0]).toMatch(/error_folder: must differ from mailbox/);
    expect(ch(', max_message_bytes: 2048, max_attachment_bytes: 4096')[0]).toMatch(/max_attachment_bytes: must be at most max_message_bytes \(2048\)/);
    expect(ch(', security: ssl')[0]).toMatch(/security/);
    expect(ch(', password_secret: nope')[0]).toMatch(/not both/);
    expect(issuesOf('channel_imap:\n  - { name: in, host: mail, username: u, service: s }\n')[0]).toMatch(/give password or password_secret/);
    expect(issuesOf('channel_imap:\n  - { name: in, host: mail, username: u, password_secret: nope, service: s }\n')[0]).toMatch(/no secret named 'nope'/);
    expect(issuesOf('channel_imap:\n  - { name: a, host: m, username: u, password: p, service: s }\n  - { name: a, host: m, username: v, password: p, service: s }\n')[0]).toMatch(/duplicate name 'a'/);
    expect(issuesOf('plugins: { use-queue: false }\nchannel_imap:\n  - { name: in, host: mail, username: u, password: p, service: s }\n').join()).toMatch(/use-queue plugin is off/);
  });

  it('keeps the password write-only', () => {
    const schema = plugins[0]!.contributes!.sections!.channel_imap!;
    expect(JSON.stringify(schema.toJSONSchema?.() ?? {})).toContain('writeOnly');
  });
});

describe('mail parsing', () => {
  const at = { uid: 7, mailbox: 'INBOX', size: 100, maxAttachmentBytes: undefined };
  it('gives repeated headers in order and the main ones to ctx.headers', async () => {
    const r = await parseMail(Buffer.from('Received: a\r\nReceived: b\r\nSubject: =?UTF-8?B?w6ljaG8=?=\r\nFrom: x@y\r\n\r\nhi\r\n'), at);
    expect(r.ok).toBe(true);
    expect(r.payload.headers.received).toEqual(['a', 'b']);
    expect(r.payload.subject).toBe('écho');
    expect(serviceHeaders(r.payload)).toEqual({ 'imap-uid': '7', 'imap-mailbox': 'INBOX', from: 'x@y', subject: '=?UTF-8?B?w6ljaG8=?=' });
  });

  it('refuses bytes without headers as MalformedMessage', async () => {
    const r = await parseMail(Buffer.from('\x00\x01 no mail'), at);
    expect(r).toMatchObject({ ok: false, refusal: { kind: 'MalformedMessage' } });
  });

  it('safe reasons never carry the password', () => {
    expect(safeReason({ authenticationFailed: true, message: 'AUTHENTICATE failed for user u with password secret' })).toBe('login refused (user or password)');
    expect(safeReason({ code: 'ECONNREFUSED' })).toBe('connection refused');
  });
});
