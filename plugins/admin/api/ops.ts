import { SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import { jsonSchemaOf, redactSecrets, type Json } from './catalogue.ts';
import { IssuesError } from './errors.ts';
import { writeAudit } from './store.ts';

/** The running server's control ops (queue replay, secret rotation, counters...), listed and run through the admin API. */
export function listOps(kernel: KernelApi): Array<{ op: string; args: Json; readOnly?: true }> {
  return kernel
    .controlOps()
    .map((o) => ({ op: o.op, args: jsonSchemaOf(o.args), ...(o.readOnly ? { readOnly: true as const } : {}) }))
    .sort((a, b) => a.op.localeCompare(b.op));
}

export async function runOp(kernel: KernelApi, op: string, args: unknown, actor: string): Promise<unknown> {
  const entry = kernel.controlOps().find((o) => o.op === op);
  if (!entry) throw new SvcError('NOT_FOUND', `No control op '${op}'`);
  const parsed = entry.args.safeParse(args ?? {});
  if (!parsed.success) {
    throw new IssuesError(
      'INVALID_INPUT',
      `Invalid arguments of ${op}`,
      parsed.error.issues.map((i) => ({ path: i.path as (string | number)[], message: i.message })),
    );
  }
  let result: unknown;
  let failure: string | undefined;
  try {
    result = await entry.handler(parsed.data);
  } catch (err) {
    if (err instanceof SvcError) throw err;
    failure = (err as Error).message;
  }
  if (entry.readOnly && failure === undefined) return result;
  await kernel.store.transaction((tx) => writeAudit(tx, { at: kernel.clock.now(), actor, action: failure === undefined ? 'op' : 'op (failed)', name: op, detail: { args: redactSecrets(parsed.data) } }), { durable: true });
  // Ops report refusals as plain errors whose messages are written for operators (no secrets).
  if (failure !== undefined) throw new SvcError('BAD_REQUEST', failure);
  return result;
}
