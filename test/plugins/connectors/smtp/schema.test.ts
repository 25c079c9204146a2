import { describe, expect, it } from 'vitest';
import { configIssues } from '../../../helpers/config.ts';
import { readSource, validate } from '../../../../kernel/config/store.ts';
import { checkMail, encodedSize, nodemailerMessage, type MailMessage } from '../../../../plugins/connectors/smtp/message.ts';
import { smtpConnectionSchema } from '../../../../plugins/connectors/smtp/schema.ts';
import { smtpError } from '../../../../plugins/connectors/smtp/connection.ts';

const plugins = [
  (await import('../../../../plugins/connectors/smtp/plugin.ts')).default,
  (await import('../../../../plugins/delivery/use-queue/plugin.ts')).default,
  (await import('../../../../plugins/secrets/named/plugin.ts')).default,
];

const issuesOf = (yaml: string) => configIssues(yaml, plugins);
const entry = smtpConnectionSchema.parse({ name: 'n', host: 'h', from: 'a@b.example', max_message_bytes: 10_000 });

describe('smtp_connection schema', () => {
  it('fills defaults: STARTTLS required, verified certificates, 25 MiB, 8 queued attempts', () => {
    const cfg = validate(readSource('smtp_connection:\n  - { name: notify, host: mail.example.com, from: "Shop <shop@example.com>" }\n', {}), plugins, {});
    expect(cfg.smtp_connection[0]).toMatchObject({ security: 'starttls', tls: { reject_unauthorized: true }, pool_size: 5, max_message_bytes: 25 * 1024 * 1024, max_recipients: 100, queue_by_default: false, ready_check: false, delivery: { max_attempts: 8, base_delay_ms: 30_000, max_delay_ms: 1_800_000 } });
  });

  it('refuses a bad from, a duplicate name, a password without user or with a secret too, an unknown secret, a size past 30 MiB', () => {
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: "nobody" }\n')[0]).toMatch(/^smtp_connection\[0\]\.from: must be one mail address/);
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: a@b.c }\n  - { name: a, host: h, from: a@b.c }\n')[0]).toMatch(/duplicate name 'a'/);
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: a@b.c, password: x }\n')[0]).toMatch(/username: a password needs a username/);
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: a@b.c, username: u, password: x, password_secret: s }\n')[0]).toMatch(/not both/);
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: a@b.c, username: u, password_secret: s }\n')[0]).toMatch(/no secret named 's'/);
    expect(issuesOf(`smtp_connection:\n  - { name: a, host: h, from: a@b.c, max_message_bytes: ${31 * 1024 * 1024} }\n`)[0]).toMatch(/max_message_bytes/);
    expect(issuesOf('smtp_connection:\n  - { name: a, host: h, from: a@b.c, security: ssl }\n')[0]).toMatch(/security/);
  });
});

describe('mail checks and mapping', () => {
  const mail = (m: Partial<MailMessage>): MailMessage => ({ to: 'x@y.example', subject: 's', text: 't', ...m });

  it('counts attachments as base64 on the wire', () => {
    const small = encodedSize(mail({}));
    const withFile = encodedSize(mail({ attachments: [{ filename: 'f', content: 'A'.repeat(3000), encoding: 'utf8' }] }));
    expect(withFile - small).toBeGreaterThanOrEqual(4000 + Math.ceil(4000 / 76) * 2);
    expect(() => checkMail(mail({ attachments: [{ filename: 'f', content: 'A'.repeat(8000), encoding: 'utf8' }] }), entry)).toThrow(/mail too large: about \d+ bytes encoded is larger than the 10000 bytes/);
  });

  it('accepts named addresses and bracketed domains; refuses a base64 attachment that is not base64', () => {
    expect(() => checkMail(mail({ to: ['"Ann B" <ann@b.example>', 'c@[192.0.2.1]'], cc: 'Dee <d@e.example>' }), entry)).not.toThrow();
    expect(() => checkMail(mail({ attachments: [{ filename: 'f', content: 'not base64!', encoding: 'base64' }] }), entry)).toThrow(/attachments\[0\]\.content is not base64/);
  });

  it('applies the connection defaults and never lets nodemailer read files or URLs', () => {
    const withDefaults = smtpConnectionSchema.parse({ name: 'n', host: 'h', from: 'a@b.example', reply_to: 'r@b.example' });
    expect(nodemailerMessage(mail({}), withDefaults)).toMatchObject({ from: 'a@b.example', replyTo: 'r@b.example', disableFileAccess: true, disableUrlAccess: true });
    expect(nodemailerMessage(mail({ from: 'o@b.example', replyTo: 'q@b.example' }), withDefaults)).toMatchObject({ from: 'o@b.example', replyTo: 'q@b.example' });
  });

  it('maps SMTP failures: 5xx permanent (BadRequest), login, 4xx and connection failures retryable', () => {
    expect(smtpError({ code: 'EENVELOPE', responseCode: 550, response: '550 No such user', rejected: ['a@b.c'] }, 'n')).toMatchObject({ code: 'BAD_REQUEST', details: "SMTP connection 'n': the server refused the mail for good: 550 No such user (rejected: a@b.c)" });
    expect(smtpError({ code: 'EAUTH', responseCode: 535, response: '535 bad' }, 'n')).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(smtpError({ code: 'EENVELOPE', responseCode: 451, response: '451 later' }, 'n')).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(smtpError({ code: 'ESOCKET', message: 'connect ECONNREFUSED' }, 'n')).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: "SMTP connection 'n' cannot send now: connect ECONNREFUSED" });
  });
});
