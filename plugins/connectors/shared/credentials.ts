import { z } from 'zod';
import { scopedRef, type KernelApi } from '../../../sdk/plugin/index.ts';
import '../../capabilities.ts';

/**
 * How a connector connection gets its password: in the config (a literal, or `${ENV}` read when the
 * config loads), or from a named secret (`secrets:`, set with `svc secret set NAME`, kept encrypted
 * in the vault). Either way it stays in the kernel process: services never see it, logs never show it.
 */
export const passwordFields = {
  password: z
    .string()
    .max(4096)
    .optional()
    .describe('Password; give it as ${ENV} rather than literally. Write-only in the admin API, never logged, never seen by services.')
    .meta({ writeOnly: true }),
  password_secret: scopedRef(z.string().min(1))
    .optional()
    .describe('Name of a `secrets:` entry holding the password instead (`svc secret set NAME`, stored encrypted in the vault). Its `services` may stay empty: connectors read it in the kernel process.'),
};

export interface PasswordSource {
  password?: string | undefined;
  password_secret?: string | undefined;
}

/** A config check: at most one of the two, and a named secret the config has. */
export function passwordIssues(entry: PasswordSource, secretNames: ReadonlySet<string>): Array<{ path: string[]; message: string }> {
  if (entry.password !== undefined && entry.password_secret !== undefined) return [{ path: ['password_secret'], message: 'give password or password_secret, not both' }];
  if (entry.password_secret !== undefined && !secretNames.has(entry.password_secret)) return [{ path: ['password_secret'], message: `no secret named '${entry.password_secret}' in secrets:` }];
  return [];
}

/**
 * The password now (read at each connect, so `svc secret set` takes effect at the next one).
 * undefined when none is configured; an Error when a named secret has no value yet.
 */
export async function resolvePassword(kernel: KernelApi, entry: PasswordSource): Promise<string | undefined> {
  if (entry.password_secret === undefined) return entry.password;
  const secrets = kernel.lookup('secrets.named');
  if (!secrets) throw new Error(`password_secret '${entry.password_secret}' needs the secrets plugin, which is off`);
  const value = await secrets.value(entry.password_secret);
  if (value === undefined) throw new Error(`secret '${entry.password_secret}' has no value yet (svc secret set ${entry.password_secret})`);
  return value;
}
