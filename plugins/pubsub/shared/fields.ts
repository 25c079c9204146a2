import { z } from 'zod';

/** Request fields both variants share, with the limits of docs/decisions/pubsub.md. */
export const MAX_EXPIRATION_SECONDS = 2_147_483_647;
export const MAX_TEXT_FIELD = 1024;

/** Message data: a string or any JSON value except null; an empty string counts as no data. */
export const messageData = z
  .union([z.string().min(1), z.number(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())])
  .describe('Message content: a string or a JSON value (object, array, number, boolean).');

export const textField = (what: string) => z.string().max(MAX_TEXT_FIELD).optional().describe(what);

export const expirationField = z.number().int().min(1).max(MAX_EXPIRATION_SECONDS);
