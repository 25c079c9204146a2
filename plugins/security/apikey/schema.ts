import { z } from 'zod';
import type { SvcConfig } from '../../../sdk/plugin/index.ts';
import { apiKeyProblem, asRefinement } from '../shared/secret-rules.ts';

export const APIKEY = 'apikey';
/** Spec: the header name is always X-API-Key (Node lower-cases header names). */
export const APIKEY_HEADER = 'x-api-key';

/** Keys of a `security[]` entry with `type: apikey` (name and type come from the kernel). */
export const apiKeyShape = {
  key: z
    .string()
    .superRefine(asRefinement(apiKeyProblem))
    .optional()
    .describe(
      'The key clients send unmodified in X-API-Key; may be `${ENV_NAME}`. Absent: a random one is generated and stored ' +
        '(set it with `svc secdef set-key NAME`). A key set with the CLI stays until this value is edited.',
    )
    .meta({ writeOnly: true }),
};

export const apiKeyEntrySchema = z.object(apiKeyShape);
export type ApiKeyEntry = z.infer<typeof apiKeyEntrySchema> & { name: string; type: typeof APIKEY };

export function apiKeyEntries(config: SvcConfig): ApiKeyEntry[] {
  return config.security.filter((s) => s.type === APIKEY) as ApiKeyEntry[];
}
