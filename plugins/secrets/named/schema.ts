import { z } from 'zod';
import { listColumn, localName, scopedRef } from '../../../sdk/plugin/index.ts';
import type { ConfigIssue, SvcConfig } from '../../../sdk/plugin/index.ts';

/** Longest value accepted, from the config file or the CLI: keys, not documents. */
export const MAX_SECRET_VALUE = 4096;

/** Names travel in CLI arguments, SDK calls and log lines: a short, plain token. */
export const secretNameSchema = z
  .string()
  .refine((name) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(localName(name)), 'letters, digits, `.`, `_` and `-`, starting with a letter or digit, at most 128 characters (a tenant\'s after its `tenant/`)');

export const secretValueSchema = z.string().min(1, 'must not be empty').max(MAX_SECRET_VALUE, `must be at most ${MAX_SECRET_VALUE} characters`);

export const namedSecretSchema = z
  .object({
    name: secretNameSchema.describe('Unique name; services refer to the secret by it (`secret(name)` in the SDK) and `svc secret set NAME` sets it.'),
    value: secretValueSchema
      .optional()
      .describe(
        'The value, usually `${ENV_NAME}`; left out, set it with `svc secret set NAME` (standard input). Stored encrypted, never logged, never readable by services. A CLI-set value stays until this value is edited (the latest change wins).',
      )
      .meta({ writeOnly: true }),
    services: listColumn(z.array(scopedRef(z.string().min(1))), 1, 'Services')
      .default([])
      .describe('Services that may use the secret (file names without extension). Left out or empty: no service may.'),
  })
  .strict();

export type NamedSecret = z.infer<typeof namedSecretSchema>;

export const secretsSectionSchema = z
  .array(namedSecretSchema)
  .default([])
  .describe('Named secrets services sign and verify with, by name, without reading them (plugins/secrets/named).').meta({ title: 'Named secrets' });

declare module '../../../sdk/plugin/extensions.ts' {
  interface ConfigSections {
    secrets: NamedSecret[];
  }
}

export function secretsOf(config: SvcConfig): NamedSecret[] {
  return config.secrets;
}

export function validateSecrets(config: SvcConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  secretsOf(config).forEach((entry, index) => {
    const first = seen.get(entry.name);
    if (first !== undefined) issues.push({ path: ['secrets', index, 'name'], message: `duplicate secret name '${entry.name}' (also secrets[${first}])` });
    else seen.set(entry.name, index);
  });
  return issues;
}
