import { z } from 'zod';
import { hostPath } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';
import { passwordFields, passwordIssues } from '../shared/credentials.ts';
import { allowedServicesField } from '../shared/fields.ts';

export const SQL_ENGINES = ['postgresql', 'mysql'] as const;
export type SqlEngine = (typeof SQL_ENGINES)[number];

const URL_PROTOCOLS: Record<SqlEngine, string[]> = { postgresql: ['postgres:', 'postgresql:'], mysql: ['mysql:', 'mariadb:'] };

export const sqlTlsSchema = z
  .object({
    enabled: z.boolean().default(true).describe('Connect over TLS.'),
    reject_unauthorized: z.boolean().default(true).describe('Refuse servers whose certificate does not verify; false only for test systems.'),
    ca_file: hostPath(z.string().min(1)).optional().describe('PEM file of extra certificate authorities to trust (read when the connection is built).'),
    server_name: z.string().min(1).optional().describe('Name to verify the certificate against, when it differs from the host (postgresql only).'),
  })
  .strict();

export const sqlEntrySchema = z
  .object({
    name: z.string().min(1).max(200).describe("Unique; service code opens the connection by this exact name (`sql('crm')`)."),
    engine: z.enum(SQL_ENGINES).describe('postgresql, or mysql (MySQL and MariaDB).'),
    url: z
      .string()
      .min(1)
      .optional()
      .describe('postgres://user:password@host:5432/database or mysql://user:password@host:3306/database; instead of host/port/database/username. Write-only: it may hold a password.')
      .meta({ writeOnly: true }),
    host: z.string().min(1).optional().describe('Database server host (when no url).'),
    port: z.number().int().min(1).max(65_535).optional().describe('Port; default 5432 (postgresql) or 3306 (mysql).'),
    database: z.string().min(1).optional().describe('Database (schema, for MySQL) to use.'),
    username: z.string().min(1).optional().describe('User to log in as.'),
    ...passwordFields,
    pool_size: z.number().int().min(1).max(1000).default(10).describe('Most connections open at once; calls beyond wait for a free one (up to connect_timeout_ms).'),
    statement_timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(3_600_000)
      .default(30_000)
      .describe('Longest a statement may run: the database cancels it (session setting), and the host drops its connection if it still runs a second later.'),
    connect_timeout_ms: z.number().int().min(1).max(600_000).default(10_000).describe('Longest wait to open a connection or get one from a full pool; past it the call is ServiceUnavailable.'),
    idle_timeout_ms: z.number().int().min(1_000).max(86_400_000).default(30_000).describe('An unused pooled connection is closed after this long.'),
    tls: sqlTlsSchema.optional().describe('TLS to the database server.'),
    read_only: z.boolean().default(false).describe('Make every session read-only in the database itself (PostgreSQL default_transaction_read_only, MySQL SET SESSION TRANSACTION READ ONLY).'),
    max_rows: z.number().int().min(1).max(10_000_000).default(10_000).describe('Most rows one statement may return; more is an error (too_many_rows), checked while rows arrive.'),
    max_result_bytes: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024)
      .default(16 * 1024 * 1024)
      .describe('Largest result of one statement (its values, about as JSON text); more is an error (too_large), checked while rows arrive.'),
    allowed_services: allowedServicesField('use the connection'),
    ready_check: z.boolean().default(false).describe('/ready answers 503 while this database cannot be reached (the pool then opens at start, not at first use).'),
  })
  .strict();

export type SqlEntry = z.infer<typeof sqlEntrySchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    sql_connection: SqlEntry[];
  }
}

export const sqlSectionSchema = z.array(sqlEntrySchema).default([]).describe('SQL databases (PostgreSQL, MySQL, MariaDB) services query by connection name.').meta({ title: 'SQL connections' });

/** The url's protocol matches the engine, or no url and the fields say where. */
function whereIssues(entry: SqlEntry): Array<{ path: string[]; message: string }> {
  if (entry.url === undefined) return entry.host === undefined ? [{ path: ['host'], message: 'give url, or host (with database and username)' }] : [];
  const issues: Array<{ path: string[]; message: string }> = [];
  let url: URL | undefined;
  try {
    url = new URL(entry.url);
  } catch {
    // Never echo the url: it may hold a password.
    return [{ path: ['url'], message: 'not a valid URL' }];
  }
  if (!URL_PROTOCOLS[entry.engine].includes(url.protocol)) issues.push({ path: ['url'], message: `a ${entry.engine} url starts with ${URL_PROTOCOLS[entry.engine].map((p) => `${p}//`).join(' or ')}` });
  for (const field of ['host', 'port', 'database', 'username'] as const) if (entry[field] !== undefined) issues.push({ path: [field], message: 'give url or the separate fields, not both' });
  if (url.password && (entry.password !== undefined || entry.password_secret !== undefined)) issues.push({ path: ['url'], message: 'the url holds a password and so does password / password_secret' });
  return issues;
}

export function validateSql(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  // secrets: is absent when the secrets plugin is off.
  const secretNames = new Set((config.secrets ?? []).map((s) => s.name));
  config.sql_connection.forEach((entry, i) => {
    const at = seen.get(entry.name);
    if (at !== undefined) issues.push({ path: ['sql_connection', i, 'name'], message: `duplicate connection name '${entry.name}' (also sql_connection[${at}])` });
    else seen.set(entry.name, i);
    if (entry.engine === 'mysql' && entry.tls?.server_name !== undefined) issues.push({ path: ['sql_connection', i, 'tls', 'server_name'], message: 'mysql connections verify the certificate against the host; server_name is for postgresql' });
    for (const issue of [...whereIssues(entry), ...passwordIssues(entry, secretNames)]) issues.push({ path: ['sql_connection', i, ...issue.path], message: issue.message });
  });
  return issues;
}
