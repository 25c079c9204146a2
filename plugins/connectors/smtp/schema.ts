import { z } from 'zod';
import { bundledPluginOn, type ConfigIssue, type SvcConfig, hostPath } from '../../../sdk/plugin/index.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { allowedServicesField, readyCheckField } from '../shared/fields.ts';

const MIB = 1024 * 1024;

/** An address as the config gives it: `a@b.c` or `Name <a@b.c>`, on one line. */
const addressField = (what: string) =>
  z
    .string()
    .min(3)
    .max(998)
    .refine((a) => !/[\r\n]/.test(a) && /@/.test(a), 'must be one mail address (a@b.c or "Name <a@b.c>") on one line')
    .describe(what);

const tlsSchema = z
  .object({
    reject_unauthorized: z.boolean().default(true).describe('Refuse servers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust (a private CA, a self-signed server).'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the host.'),
  })
  .strict();

const timeoutField = (what: string, dflt: number) => z.number().int().min(100).max(600_000).default(dflt).describe(what);

/** Retries of mails sent with `{ queue: true }`: the Use queue's settings of the queue smtp:<name>. */
export const mailDeliverySchema = z
  .object({
    max_attempts: z.number().int().min(1).max(100).default(8).describe('Attempts of a queued mail before it goes to the dead-letter queue (a permanent 5xx refusal goes there at once).'),
    base_delay_ms: z.number().int().min(10).max(3_600_000).default(30_000).describe('Wait after the first failed attempt; doubles per attempt.'),
    max_delay_ms: z.number().int().min(10).max(86_400_000).default(1_800_000).describe('Longest wait between two attempts.'),
    concurrency: z.number().int().min(1).max(100).default(2).describe('Queued mails of this connection sent at once on one node.'),
    max_depth: z.number().int().min(1).max(10_000_000).default(100_000).describe('Queued mails held at most; a queued send beyond answers ServiceUnavailable.'),
  })
  .strict()
  .refine((d) => d.max_delay_ms >= d.base_delay_ms, { path: ['max_delay_ms'], message: 'must be at least base_delay_ms' });

export const smtpConnectionSchema = z
  .object({
    name: z.string().min(1).max(200).describe('Unique; services send with mail(name); queued mails and their dead letters are in the queue smtp:<name>.'),
    host: z.string().min(1).describe('SMTP server (submission) host.'),
    port: z.number().int().min(1).max(65535).optional().describe('Port; default 587 (starttls, none) or 465 (tls).'),
    security: z
      .enum(['starttls', 'tls', 'none'])
      .default('starttls')
      .describe('starttls: plain connect, then STARTTLS, required (a server that does not offer it is refused); tls: TLS from the first byte (port 465); none: clear text, only for a relay on a trusted network.'),
    tls: tlsSchema.default({ reject_unauthorized: true }).describe('Certificate checks of starttls and tls.'),
    username: z.string().min(1).max(1024).optional().describe('User name to log in with (AUTH); no login when absent.'),
    ...passwordFields,
    from: addressField('Default sender of mails that give no from, e.g. "Billing <billing@example.com>".'),
    reply_to: addressField('Default Reply-To of mails that give none.').optional(),
    pool_size: z.number().int().min(1).max(100).default(5).describe('SMTP connections kept open at most (a pooled transport).'),
    connect_timeout_ms: timeoutField('Limit of opening a connection.', 10_000),
    greeting_timeout_ms: timeoutField("Limit of waiting for the server's greeting once connected.", 10_000),
    socket_timeout_ms: timeoutField('Limit of silence on an open connection (during a send, too).', 60_000),
    max_message_bytes: z
      .number()
      .int()
      .min(1024)
      .max(30 * MIB)
      .default(25 * MIB)
      .describe('Largest mail, counted as encoded for the wire (attachments in base64), at most 30 MiB (what a service can hand over); a larger one is refused with PayloadTooLarge (413, mail too large) before anything is sent.'),
    max_recipients: z.number().int().min(1).max(10_000).default(100).describe('Most recipients (to, cc and bcc together) of one mail.'),
    queue_by_default: z.boolean().default(false).describe('send() stores the mail in the Use queue (as with { queue: true }) unless the call says { queue: false }.'),
    delivery: mailDeliverySchema.default(mailDeliverySchema.parse({})).describe('Retries of queued mails (the Use queue, queue smtp:<name>).'),
    allowed_services: allowedServicesField('send mail on the connection'),
    ready_check: readyCheckField.describe('Verify the connection (connect, STARTTLS, login) at start and when /ready asks (at most every 30 s); /ready answers 503 while it fails.'),
  })
  .strict();

export type SmtpConnectionEntry = z.infer<typeof smtpConnectionSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    smtp_connection: SmtpConnectionEntry[];
  }
}

export const smtpConnectionSectionSchema = z.array(smtpConnectionSchema).default([]).describe('Outgoing mail servers (SMTP): services send with mail(name).send(...) (plugins/connectors/smtp).').meta({ title: 'SMTP connections' });

export function validateSmtp(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const secretNames = new Set(config.secrets.map((s) => s.name));
  const seen = new Map<string, number>();
  const useQueueOn = bundledPluginOn(config, 'use-queue');
  config.smtp_connection.forEach((c, i) => {
    const at = seen.get(c.name);
    if (at !== undefined) issues.push({ path: ['smtp_connection', i, 'name'], message: `duplicate name '${c.name}' (also smtp_connection[${at}])` });
    else seen.set(c.name, i);
    for (const p of passwordIssues(c, secretNames)) issues.push({ path: ['smtp_connection', i, ...p.path], message: p.message });
    if ((c.password !== undefined || c.password_secret !== undefined) && c.username === undefined) issues.push({ path: ['smtp_connection', i, 'username'], message: 'a password needs a username' });
    if (c.queue_by_default && !useQueueOn) issues.push({ path: ['smtp_connection', i, 'queue_by_default'], message: 'queued sends need the use-queue plugin, which is off' });
  });
  return issues;
}
