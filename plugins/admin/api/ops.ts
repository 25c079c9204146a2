import { SvcError, type ControlOp, type KernelApi } from '../../../sdk/plugin/index.ts';
import { tenantOf, walkRefs } from '../../../sdk/plugin/tenants.ts';
import { auditValue, jsonSchemaOf, redactSecrets, type Json } from './catalogue.ts';
import { IssuesError } from './errors.ts';
import { canChange, refuseRole, type Principal } from './roles.ts';
import type { TenantScope } from './scope.ts';
import { writeAudit } from './store.ts';

/**
 * Whether the principal may run the op: platform administrators any; a tenant's only those that
 * declare `tenantScoped` (they can be limited to one tenant), and a viewer only those that read.
 */
function runs(p: Principal | undefined, op: ControlOp): boolean {
  if (p === undefined || p.tenant === undefined) return true;
  return op.tenantScoped === true && (op.readOnly === true || canChange(p));
}

/** The running server's control ops (queue replay, secret rotation, counters...) the principal may run, listed and run through the admin API. */
export function listOps(kernel: KernelApi, p?: Principal): Array<{ op: string; args: Json; readOnly?: true; tenantScoped?: true }> {
  return kernel
    .controlOps()
    .filter((o) => runs(p, o))
    .map((o) => ({ op: o.op, args: jsonSchemaOf(o.args), ...(o.readOnly ? { readOnly: true as const } : {}), ...(o.tenantScoped ? { tenantScoped: true as const } : {}) }))
    .sort((a, b) => a.op.localeCompare(b.op));
}

export async function runOp(kernel: KernelApi, scope: TenantScope, op: string, args: unknown, p: Principal): Promise<unknown> {
  const entry = kernel.controlOps().find((o) => o.op === op);
  if (!entry) throw new SvcError('NOT_FOUND', `No control op '${op}'`);
  if (p.tenant !== undefined && !entry.tenantScoped) throw new SvcError('FORBIDDEN', `Op '${op}' is the platform's: it cannot be limited to one tenant`);
  const parsed = entry.args.safeParse(args ?? {});
  if (!parsed.success) {
    throw new IssuesError(
      'INVALID_INPUT',
      `Invalid arguments of ${op}`,
      parsed.error.issues.map((i) => ({ path: i.path as (string | number)[], message: i.message })),
    );
  }
  // A tenant's administrator names things in its tenant: each marked argument is resolved as in a URL (404 for another tenant's).
  const tenant = p.tenant;
  const data = tenant === undefined ? parsed.data : walkRefs(entry.args, parsed.data, (ref) => scope.resolve(p, ref.value, (name) => `No such ${String(ref.path.at(-1) ?? 'name')}: '${name}'`)).value;
  // After the names: another tenant's is a 404 whatever the role, as in a URL.
  if (!runs(p, entry)) refuseRole(p, 'run ops that change something');
  let result: unknown;
  let failure: string | undefined;
  try {
    result = await entry.handler(data, tenant === undefined ? undefined : { tenant }, p.who);
  } catch (err) {
    // Refused with svc's own error (a deploy whose tests failed, a name taken): audited as failed, answered as thrown.
    if (err instanceof SvcError) {
      if (!entry.readOnly) await auditOp(kernel, entry, data, p.who, tenant, err.message);
      throw err;
    }
    failure = (err as Error).message;
  }
  if (entry.readOnly && failure === undefined) return result;
  await auditOp(kernel, entry, data, p.who, tenant, failure);
  // Ops report refusals as plain errors whose messages are written for operators (no secrets).
  if (failure !== undefined) throw new SvcError('BAD_REQUEST', failure);
  return result;
}

/**
 * An op's audit row: who ran it, its arguments (secrets redacted), the tenant (the caller's, or
 * the one its arguments name), and whether it failed. Through the admin API and, with actor
 * `cli`, through the control socket (the `svc` commands: KernelApi.onControlRun).
 */
export async function auditOp(kernel: KernelApi, entry: ControlOp, args: unknown, actor: string, tenant: string | undefined, failure: string | undefined): Promise<void> {
  const auditTenant = tenant ?? walkRefs(entry.args, args).refs.map((r) => tenantOf(r.value)).find((t) => t !== undefined);
  await kernel.store.transaction(
    (tx) => writeAudit(tx, { at: kernel.clock.now(), actor, tenant: auditTenant, action: failure === undefined ? 'op' : 'op (failed)', name: entry.op, detail: { args: auditArgs(args), ...(failure === undefined ? {} : { error: failure.slice(0, 2000) }) } }),
    { durable: true },
  );
}

/** An op's arguments in its audit row: each redacted, and one past 1,000 characters (a service's source) as its size. */
function auditArgs(args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return auditValue(args);
  return Object.fromEntries(Object.entries(redactSecrets(args) as Record<string, unknown>).map(([k, v]) => [k, auditValue(v)]));
}
