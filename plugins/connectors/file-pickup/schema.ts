import { z } from 'zod';
import { bundledPluginOn, Cron, CronError, isTimeZone, parseDuration, type ConfigIssue, type SvcConfig, type ValidationContext, hostPath, listColumn, scopedRef } from '../../../sdk/plugin/index.ts';
import { inboundDeliverySchema } from '../shared/inbound.ts';
import { formatSettingsFields, formatSettingsIssues, readyCheckField } from '../shared/fields.ts';
import { checkRelative } from './local-folder.ts';

const folderPath = z.string().min(1).max(1000);

const sourceSchema = z
  .object({
    local: z.object({ path: hostPath(folderPath).describe('The folder on this machine (absolute, or relative to the working directory).') }).strict().optional().describe('A local folder.'),
    sftp: z
      .object({
        connection: scopedRef(z.string().min(1), { to: ['sftp_connection'] }).describe('The sftp_connection to poll on (plugins/connectors/sftp).'),
        path: folderPath.describe("The folder on the server, relative to the connection's root."),
      })
      .strict()
      .optional()
      .describe('A folder on an SFTP server.'),
  })
  .strict()
  .refine((s) => (s.local === undefined) !== (s.sftp === undefined), 'give local or sftp, one of them');

// Checked here with the SDK's parsers, the scheduler's own (which times the polls): a bad schedule is a config error, not a channel that never polls.
const pollSchema = z
  .object({
    every: z
      .union([z.string().min(1), z.number().int().min(1)])
      .superRefine((value, ctx) => {
        const ms = parseDuration(value);
        if (typeof ms !== 'number') ctx.addIssue({ code: 'custom', message: ms.error });
        else if (ms < 1) ctx.addIssue({ code: 'custom', message: 'an interval must be at least 1 ms' });
      })
      .optional()
      .describe('Poll at this interval: 30s, 5m, 1h, or milliseconds (read by the scheduler plugin).'),
    cron: z
      .string()
      .min(1)
      .superRefine((text, ctx) => {
        try {
          new Cron(text);
        } catch (err) {
          if (!(err instanceof CronError)) throw err;
          ctx.addIssue({ code: 'custom', message: err.message });
        }
      })
      .optional()
      .describe('Poll on a cron expression (5 fields, or 6 with seconds first), as scheduler_job reads it; with every too, whichever falls first.'),
    timezone: z.string().min(1).refine(isTimeZone, 'not an IANA time zone name (e.g. Europe/Berlin)').optional().describe('IANA time zone of cron; default server.timezone.'),
  })
  .strict()
  .refine((p) => p.every !== undefined || p.cron !== undefined, 'give every, cron or both');

const stableSchema = z
  .object({
    polls: z.number().int().min(1).max(100).optional().describe('A file is taken once its size and modification time were the same at this many polls in a row (2: unchanged since the last poll; 1: at once).'),
    marker: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[^/\\\0]+$/, 'a suffix, without /')
      .optional()
      .describe('A file is taken once a marker file named after it with this suffix exists (`orders.csv` waits for `orders.csv.done`); the marker is removed after the file moved.'),
  })
  .strict()
  .refine((s) => s.polls === undefined || s.marker === undefined, 'give polls or marker, not both');


export const channelFileSchema = z
  .object({
    name: z.string().min(1).max(200).regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits and _ . -').describe('Unique; the Use queue lane and dead letters are file:<name>.'),
    source: listColumn(sourceSchema, 1, 'Source').describe('Where files are picked up: `{ local: { path } }` or `{ sftp: { connection, path } }`.'),
    service: listColumn(scopedRef(z.string().min(1), { to: ['services'] }), 2, 'Service').describe('Service each file runs.'),
    pattern: listColumn(z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]), 3, 'Pattern')
      .default('*')
      .describe('Glob(s) a file name must match: `*.csv`, `[Oo]rder-??.xml`, or a list of them (* any characters, ? one, [..] a set).'),
    recursive: z.boolean().default(false).describe('Also pick up files in subfolders (never in the done and error folders, never through symlinks).'),
    poll: pollSchema.default({ every: '30s' }).describe('When the folder is listed: every and/or cron, read by the scheduler plugin.'),
    stable: stableSchema.default({ polls: 2 }).describe('How a file still being written is told apart: `{ polls: 2 }` (default) or `{ marker: .done }`.'),
    done_folder: folderPath.default('done').describe('Where a processed file is moved, relative to the source folder (created when missing).'),
    delete: z.boolean().default(false).describe('Remove a processed file instead of moving it to done_folder.'),
    error_folder: folderPath.default('error').describe('Where a file that failed for good (or is too big) is moved, relative to the source folder; it is dead-lettered too.'),
    max_file_bytes: z.number().int().min(1).max(2 ** 31 - 1).default(64 * 1024 * 1024).describe('Bigger files are not read: moved to error_folder and dead-lettered with the reason.'),
    data_format: listColumn(z.string().min(1), 4, 'Data format').default('none').describe('How file contents are decoded into ctx.payload (csv, json, xml, form, hl7...; none: the service reads ctx.rawBody).'),
    ...formatSettingsFields,
    delivery: inboundDeliverySchema.default(inboundDeliverySchema.parse({})).describe('Use queue or in-place retries.'),
    max_files_per_poll: z.number().int().min(1).max(100_000).default(1_000).describe('Files taken at most per poll; the rest wait for the next.'),
    concurrency: z.number().int().min(1).max(1_000).default(4).describe('Files whose service runs at once (per node).'),
    ready_check: readyCheckField,
  })
  .strict();

export type ChannelFileEntry = z.infer<typeof channelFileSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    channel_file: ChannelFileEntry[];
  }
}

export const channelFileSectionSchema = z.array(channelFileSchema).default([]).describe('Folders (local or SFTP) whose files run a service, each once (plugins/connectors/file-pickup).').meta({ title: 'File channels' });

/** A glob of one file name as a regular expression. */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) out += '\\[';
      else {
        const body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        out += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

export function validateFilePickup(config: SvcConfig, ctx: ValidationContext): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const channels = config.channel_file;
  if (channels.length === 0) return issues;
  const seen = new Map<string, number>();
  const sftpNames = new Set(((config as unknown as { sftp_connection?: Array<{ name: string }> }).sftp_connection ?? []).map((c) => c.name));
  const schedulerOn = bundledPluginOn(config, 'scheduler');
  const useQueueOn = bundledPluginOn(config, 'use-queue');
  channels.forEach((ch, i) => {
    const at = (...key: Array<string | number>) => ['channel_file', i, ...key];
    const before = seen.get(ch.name);
    if (before !== undefined) issues.push({ path: at('name'), message: `duplicate name '${ch.name}' (also channel_file[${before}])` });
    else seen.set(ch.name, i);
    if (ch.source.sftp && !sftpNames.has(ch.source.sftp.connection)) {
      issues.push({ path: at('source', 'sftp', 'connection'), message: `no sftp_connection named '${ch.source.sftp.connection}' (is the sftp plugin on?)` });
    }
    if (!schedulerOn) issues.push({ path: at('poll'), message: 'polls are timed by the scheduler plugin, which is off: turn plugins.scheduler on' });
    if (!useQueueOn) issues.push({ path: at('delivery'), message: "the use-queue plugin is off: it keeps svc's dead letters and delivery.use_queue; turn it on" });
    if (!ctx.messageFormats.has(ch.data_format)) issues.push({ path: at('data_format'), message: `no enabled plugin decodes messages of data_format '${ch.data_format}' (${[...ctx.messageFormats].join(', ')})` });
    for (const { key, message } of formatSettingsIssues(ch)) issues.push({ path: at(key), message });
    for (const key of ['done_folder', 'error_folder'] as const) {
      try {
        if (checkRelative(ch[key]) === '') issues.push({ path: at(key), message: 'must name a subfolder of the source folder' });
      } catch {
        issues.push({ path: at(key), message: 'must be a folder inside the source folder (no .., not absolute)' });
      }
    }
    if (!ch.delete && ch.done_folder === ch.error_folder) issues.push({ path: at('error_folder'), message: 'must differ from done_folder' });
  });
  return issues;
}
