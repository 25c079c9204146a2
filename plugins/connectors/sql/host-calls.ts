import { z } from 'zod';
import type { HostCall, HostCallContext } from '../../../sdk/plugin/index.ts';
import type { Statement, SqlConnection } from './connection.ts';
import type { DriverParam } from './engine.ts';
import { connectionForService } from '../shared/access.ts';

export const MAX_TEXT_CHARS = 1024 * 1024;
export const MAX_PARAMS = 10_000;
export const MAX_STATEMENTS = 1000;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const bytesParam = z.object({ $bytes: z.string().regex(BASE64, 'must be base64') }).strict();
/**
 * One value: null, boolean, number, string, `{ $bytes: base64 }` (binary), or an array or object
 * (sent as its JSON text). Anything else never gets here: the sandbox sends JSON.
 */
const paramSchema = z.union([
  z.null(),
  z.boolean(),
  z.number(),
  z.string(),
  bytesParam,
  z.array(z.unknown()),
  z.record(z.string(), z.unknown()).refine((o) => !('$bytes' in o), '{ $bytes } holds base64 text and nothing else'),
]);
const statementSchema = z
  .object({
    text: z.string().min(1).max(MAX_TEXT_CHARS),
    params: z.array(paramSchema).max(MAX_PARAMS).optional(),
  })
  .strict();
const connectionName = z.string().min(1).max(200);

export const queryArgs = statementSchema.extend({ connection: connectionName }).strict();
export const transactionArgs = z.object({ connection: connectionName, statements: z.array(statementSchema).min(1).max(MAX_STATEMENTS) }).strict();
export type QueryArgs = z.infer<typeof queryArgs>;
export type TransactionArgs = z.infer<typeof transactionArgs>;

function driverParam(value: z.infer<typeof paramSchema>): DriverParam {
  if (value === null || typeof value !== 'object') return value;
  if (!Array.isArray(value) && typeof value.$bytes === 'string') return Buffer.from(value.$bytes, 'base64');
  return JSON.stringify(value);
}

export function statementOf(args: z.infer<typeof statementSchema>): Statement {
  return { text: args.text, params: args.params ? args.params.map(driverParam) : [] };
}

/**
 * `sql.query` and `sql.transaction`: statements on a connection of config, by name. An unknown
 * name is NotFound, a service the connection does not allow Forbidden (both logged at warn); the
 * database down is ServiceUnavailable; a failed statement is a `failed` answer (the SDK's SqlError).
 */
export function sqlHostCalls(connectionOf: (name: string) => SqlConnection | undefined): HostCall[] {
  const open = (name: string, ctx: HostCallContext): SqlConnection => connectionForService('SQL', name, connectionOf, (c) => c.entry.allowed_services, ctx);
  const query: HostCall<QueryArgs> = {
    op: 'sql.query',
    args: queryArgs,
    quota: 'outgoing_calls_per_minute',
    handler: async (args, ctx) => open(args.connection, ctx).query(statementOf(args), ctx.timeLeftMs()),
  };
  const transaction: HostCall<TransactionArgs> = {
    op: 'sql.transaction',
    args: transactionArgs,
    quota: 'outgoing_calls_per_minute',
    handler: async (args, ctx) => open(args.connection, ctx).transaction(args.statements.map(statementOf), ctx.timeLeftMs()),
  };
  return [query, transaction];
}
