import { z } from 'zod';
import { bundledPluginOn, type ConfigIssue, type SvcConfig, hostPath, scopedRef } from '../../../sdk/plugin/index.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { readyCheckField, reconnectSchema } from '../shared/fields.ts';
import { inboundDeliverySchema } from '../shared/inbound.ts';

const MIB = 1024 * 1024;

const tlsSchema = z
  .object({
    reject_unauthorized: z.boolean().default(true).describe('Refuse servers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust (a self-signed server certificate).'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the host.'),
  })
  .strict();

const folderName = z.string().min(1).max(255);

const afterSuccessSchema = z
  .object({
    action: z
      .enum(['seen', 'move', 'delete'])
      .default('seen')
      .describe('What is done to a message once it is done with (the service succeeded, or it is stored in the Use queue): flagged \\Seen and left, moved to `folder`, or deleted (flagged \\Deleted and expunged).'),
    folder: folderName.optional().describe('Folder processed messages move to (action: move); created when missing.'),
  })
  .strict();

export const channelImapSchema = z
  .object({
    name: z.string().min(1).describe('Unique; the Use queue lane and dead letters are imap:<name>.'),
    host: z.string().min(1).describe('IMAP server host.'),
    port: z.number().int().min(1).max(65535).optional().describe('Server port; default 993 with security: tls, else 143.'),
    security: z
      .enum(['starttls', 'tls', 'none'])
      .default('starttls')
      .describe('starttls: plain connection upgraded with STARTTLS (refused when the server does not offer it); tls: TLS from the start (imaps); none: no encryption (test systems only).'),
    tls: tlsSchema.optional().describe('Certificate checks for starttls and tls.'),
    username: z.string().min(1).describe('Login name of the mailbox account.'),
    ...passwordFields,
    mailbox: folderName.default('INBOX').describe('Folder watched for new messages.'),
    service: scopedRef(z.string().min(1), { to: ['services'] }).describe('Service each message runs (ctx.payload: the parsed mail).'),
    after_success: afterSuccessSchema.default({ action: 'seen' }).describe('What happens to a message on the server once it is done with.'),
    error_folder: folderName.default('svc-errors').describe('Folder a message moves to when it is dead-lettered (failed every attempt, too large, or not a parsable mail); created when missing.'),
    idle: z.boolean().default(true).describe('Wait for new messages with IMAP IDLE (pushed by the server within a second); the mailbox is also polled every poll_interval_ms, and only polled when the server has no IDLE or this is false.'),
    poll_interval_ms: z.number().int().min(100).max(3_600_000).default(60_000).describe('How often the mailbox is searched for new messages (a fallback beside IDLE, the only way without it).'),
    max_message_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * MIB)
      .default(25 * MIB)
      .describe('Largest message downloaded (its size as the server reports it). A bigger one is not downloaded: it is dead-lettered with its headers and moved to error_folder.'),
    max_attachment_bytes: z
      .number()
      .int()
      .min(1)
      .max(1024 * MIB)
      .optional()
      .describe('Largest single attachment (decoded); a message with a bigger one is dead-lettered with the reason and moved to error_folder. Default: no limit beyond max_message_bytes.'),
    batch: z.number().int().min(1).max(1000).default(100).describe('Messages read per search of the mailbox; more wait for the next round, which follows at once.'),
    delivery: inboundDeliverySchema.default(inboundDeliverySchema.parse({})).describe('Use queue or in-place retries.'),
    connect_timeout_ms: z.number().int().min(100).max(300_000).default(10_000).describe('Limit of one connection attempt (TCP, TLS and greeting).'),
    reconnect: reconnectSchema({ min_ms: 1_000, max_ms: 60_000 }),
    lease_ms: z
      .number()
      .int()
      .min(300)
      .max(600_000)
      .default(30_000)
      .describe('One node at a time works the channel, holding a lease in the data store renewed every third of this. Another node takes it over when its holder stops, is listed down by the nodes plugin, or has not renewed for this long; a holder that could not renew stops between messages.'),
    ready_check: readyCheckField,
  })
  .strict();

export type ChannelImapEntry = z.infer<typeof channelImapSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    channel_imap: ChannelImapEntry[];
  }
}

export const channelImapSectionSchema = z.array(channelImapSchema).default([]).describe('Mailbox folders whose new messages run a service (plugins/connectors/imap).').meta({ title: 'IMAP channels' });

export function validateImap(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const channels = config.channel_imap;
  const seen = new Map<string, number>();
  const secretNames = new Set(config.secrets.map((s) => s.name));
  const useQueueOn = bundledPluginOn(config, 'use-queue');
  channels.forEach((ch, i) => {
    const at = (...key: Array<string | number>) => ['channel_imap', i, ...key];
    const first = seen.get(ch.name);
    if (first !== undefined) issues.push({ path: at('name'), message: `duplicate name '${ch.name}' (also channel_imap[${first}])` });
    else seen.set(ch.name, i);
    for (const p of passwordIssues(ch, secretNames)) issues.push({ path: at(...p.path), message: p.message });
    if (ch.password === undefined && ch.password_secret === undefined) issues.push({ path: at('password'), message: 'give password or password_secret' });
    const { action, folder } = ch.after_success;
    if (action === 'move' && folder === undefined) issues.push({ path: at('after_success', 'folder'), message: 'action: move needs a folder' });
    if (action !== 'move' && folder !== undefined) issues.push({ path: at('after_success', 'folder'), message: 'folder applies only to action: move' });
    if (folder !== undefined && folder === ch.mailbox) issues.push({ path: at('after_success', 'folder'), message: 'must differ from mailbox' });
    if (ch.error_folder === ch.mailbox) issues.push({ path: at('error_folder'), message: 'must differ from mailbox (dead-lettered messages would be read again)' });
    if (ch.max_attachment_bytes !== undefined && ch.max_attachment_bytes > ch.max_message_bytes) issues.push({ path: at('max_attachment_bytes'), message: `must be at most max_message_bytes (${ch.max_message_bytes})` });
    if (!useQueueOn) issues.push({ path: at('delivery'), message: "the use-queue plugin is off: it keeps svc's dead letters (and delivery.use_queue); turn it on" });
  });
  return issues;
}
