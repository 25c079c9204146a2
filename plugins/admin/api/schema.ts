import { z } from 'zod';
import { ADMIN_USER, localAccountSchema, ROLES, tenantNameSchema } from './roles.ts';

/** `server.admin`: the admin listener, apart from the channel listener. */
export const adminServerSchema = z
  .object({
    enabled: z.boolean().default(true).describe('Whether the admin listener (admin API, later the Dashboard) is started.'),
    host: z.string().min(1).default('127.0.0.1').describe('Address the admin listener binds to; loopback by default, so only local users and tunnels reach it.'),
    port: z.number().int().min(0).max(65535).default(17011).describe('Port of the admin listener; SVC_ADMIN_PORT overrides it.'),
  })
  .strict()
  .prefault({})
  .describe('The admin listener (plugins/admin/api).');

export type AdminServer = z.infer<typeof adminServerSchema>;

declare module '../../../sdk/plugin/extensions.ts' {
  interface ServerFields {
    admin?: AdminServer;
  }
}

/** `plugins.admin.config`. */
export const adminOptionsSchema = z
  .object({
    session_ttl_minutes: z.number().int().min(1).max(7 * 24 * 60).default(60).describe('How long an admin session lasts after login, in minutes.'),
    login_failures_per_minute: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(5)
      .describe('Failed logins one client address may make within a minute; more are refused with 429 until the minute has passed.'),
  })
  .strict()
  .prefault({});

export type AdminOptions = z.infer<typeof adminOptionsSchema>;

export const loginSchema = z
  .object({
    username: z
      .string()
      .min(1)
      .max(200)
      .default(ADMIN_USER)
      .describe("The account: `admin` (the default), another platform administrator's name, or a tenant's account as `<tenant>/<name>`."),
    password: z.string().min(1).max(1024).describe('Its password (for `admin`: created at first start and printed once, or set with `svc admin set-password`).').meta({ writeOnly: true }),
  })
  .strict();

export const loginReplySchema = z.object({
  user: z.string().describe('Who is logged in.'),
  role: z.enum(ROLES).describe('Its role: platform, or owner, developer or viewer of its tenant.'),
  tenant: z.string().nullable().describe('The tenant of a tenant role; null for a platform administrator.'),
  csrfToken: z.string().describe('Send it in the X-CSRF-Token header with every request that changes something.'),
  expiresAt: z.string().describe('When the session ends (ISO 8601).'),
});

/** Key names appear in audit rows and CLI output (a tenant's as `<tenant>/<name>`). */
export const keyNameSchema = localAccountSchema;

const grantFields = {
  role: z.enum(ROLES).describe("platform (everything), or owner, developer or viewer of one tenant. A tenant's owner gives tenant roles only."),
  tenant: tenantNameSchema
    .optional()
    .describe("The tenant of a tenant role (declared in `tenants`). A tenant's owner leaves it out: its own tenant."),
};

export const newUserSchema = z
  .object({
    name: localAccountSchema.describe("The account's name; a tenant's account logs in as `<tenant>/<name>`."),
    password: z.string().min(8).max(1024).describe('Its password, 8 to 1024 characters; stored as a scrypt hash.').meta({ writeOnly: true }),
    ...grantFields,
  })
  .strict();

export const newKeySchema = z
  .object({
    name: keyNameSchema.describe("The key's name (a tenant's is stored as `<tenant>/<name>`)."),
    ...grantFields,
  })
  .strict();

export const importSchema = z
  .record(z.string(), z.array(z.record(z.string(), z.unknown())))
  .describe('Sections of the config (channel_rest, security, groups, ...), each a list of entries named by `name`: each entry is created, or replaces the entry of its name.');

export const auditQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100).describe('Most rows, newest first.'),
    before: z.coerce.number().int().min(1).optional().describe('Only rows with a smaller id (paging).'),
    tenant: tenantNameSchema.optional().describe("Only this tenant's rows (a tenant's administrators see their own only)."),
  })
  .strict();
