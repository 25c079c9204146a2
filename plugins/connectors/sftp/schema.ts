import { z } from 'zod';
import { hostPath, scopedRef } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { allowedServicesField, readyCheckField, reconnectSchema } from '../shared/fields.ts';
import { parsePinnedKey } from './host-key.ts';
import { pathProblem } from './paths.ts';

export const sftpEntrySchema = z
  .object({
    name: z.string().min(1).max(200).describe("Unique; service code opens the connection by this exact name (`sftp('partner')`)."),
    host: z.string().min(1).describe('SFTP server host name or address.'),
    port: z.number().int().min(1).max(65_535).default(22).describe('SSH port of the server.'),
    username: z.string().min(1).describe('User to log in as.'),
    ...passwordFields,
    private_key_secret: scopedRef(z.string().min(1), { to: ['secrets'] }).optional().describe('Name of a `secrets:` entry holding the private key (OpenSSH or PEM text) to log in with.'),
    private_key_file: hostPath(z.string().min(1)).optional().describe('File holding the private key to log in with, read at each connect (instead of private_key_secret).'),
    passphrase: z.string().max(4096).optional().describe("The private key's passphrase; give it as ${ENV}. Write-only, never logged.").meta({ writeOnly: true }),
    passphrase_secret: scopedRef(z.string().min(1), { to: ['secrets'] }).optional().describe("Name of a `secrets:` entry holding the private key's passphrase instead."),
    host_key: z
      .string()
      .min(1)
      .describe('Required: the server key pinned, as `ssh-ed25519 AAAA…` (from `ssh-keyscan -t ed25519 host`) or its fingerprint `SHA256:…` (as `ssh-keygen -lf` prints). A server presenting another key is refused.'),
    root: z.string().min(1).default('.').describe('Folder on the server every path is relative to (absolute, or relative to the login folder); paths that would leave it are refused.'),
    max_file_bytes: z
      .number()
      .int()
      .min(1)
      .max(1024 * 1024 * 1024)
      .default(64 * 1024 * 1024)
      .describe('Largest file a service may put or get; larger is PayloadTooLarge (413), a get checked by size before any byte is read.'),
    pool_size: z.number().int().min(1).max(100).default(4).describe('Most SSH sessions open at once; calls beyond wait for a free one (up to connect_timeout_ms).'),
    idle_ms: z.number().int().min(1000).max(86_400_000).default(60_000).describe('An unused session is closed after this long.'),
    connect_timeout_ms: z.number().int().min(100).max(600_000).default(10_000).describe('Longest wait to open a session (TCP, SSH handshake, login) or get one from a full pool; past it the call is ServiceUnavailable.'),
    operation_timeout_ms: z.number().int().min(100).max(3_600_000).default(120_000).describe('Longest one operation (a whole put or get included) may take; past it the session is closed and the call is ServiceUnavailable. A service\'s call waits no longer than its time limit less 100 ms.'),
    keepalive_ms: z.number().int().min(0).max(3_600_000).default(15_000).describe('SSH keepalive interval on open sessions; 0 turns it off. Three missed answers close the session.'),
    reconnect: reconnectSchema({ min_ms: 500, max_ms: 30_000 }),
    allowed_services: allowedServicesField('use the connection'),
    ready_check: readyCheckField,
  })
  .strict();

export type SftpEntry = z.infer<typeof sftpEntrySchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    sftp_connection: SftpEntry[];
  }
}

export const sftpSectionSchema = z.array(sftpEntrySchema).default([]).describe('SFTP servers services put files on and get files from, by connection name, with the server key pinned.').meta({ title: 'SFTP connections' });

function entryIssues(entry: SftpEntry, secretNames: ReadonlySet<string>): Array<{ path: string[]; message: string }> {
  const issues = passwordIssues(entry, secretNames);
  const hasPassword = entry.password !== undefined || entry.password_secret !== undefined;
  const hasKey = entry.private_key_secret !== undefined || entry.private_key_file !== undefined;
  if (!hasPassword && !hasKey) issues.push({ path: ['password'], message: 'give a password (password / password_secret) or a private key (private_key_secret / private_key_file)' });
  if (entry.private_key_secret !== undefined && entry.private_key_file !== undefined) issues.push({ path: ['private_key_file'], message: 'give private_key_secret or private_key_file, not both' });
  if (entry.passphrase !== undefined && entry.passphrase_secret !== undefined) issues.push({ path: ['passphrase_secret'], message: 'give passphrase or passphrase_secret, not both' });
  if ((entry.passphrase !== undefined || entry.passphrase_secret !== undefined) && !hasKey) issues.push({ path: ['passphrase'], message: 'a passphrase goes with a private key' });
  for (const field of ['private_key_secret', 'passphrase_secret'] as const) {
    const name = entry[field];
    if (name !== undefined && !secretNames.has(name)) issues.push({ path: [field], message: `no secret named '${name}' in secrets:` });
  }
  const pinned = parsePinnedKey(entry.host_key);
  if (typeof pinned === 'string') issues.push({ path: ['host_key'], message: pinned });
  if (entry.root !== '.' && entry.root.includes('\0')) issues.push({ path: ['root'], message: 'must not hold NUL' });
  return issues;
}

export function validateSftp(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  // secrets: is absent when the secrets plugin is off.
  const secretNames = new Set((config.secrets ?? []).map((s) => s.name));
  config.sftp_connection.forEach((entry, i) => {
    const at = seen.get(entry.name);
    if (at !== undefined) issues.push({ path: ['sftp_connection', i, 'name'], message: `duplicate connection name '${entry.name}' (also sftp_connection[${at}])` });
    else seen.set(entry.name, i);
    for (const issue of entryIssues(entry, secretNames)) issues.push({ path: ['sftp_connection', i, ...issue.path], message: issue.message });
  });
  return issues;
}

/** For the capability's `open(connection, root)`: a root under the connection's, checked as paths are. */
export function folderRootProblem(root: string): string | undefined {
  return root === '' || root === '.' ? undefined : pathProblem(root);
}
