import { scopedFor, SvcError, type HostCallContext } from '../../../sdk/plugin/index.ts';

/**
 * The connection a service names in a host call (`sql('crm')`, `mail('notify')`…), if it may use
 * it: NotFound for a name the config does not have, Forbidden for a service not in the
 * connection's `allowed_services`. Both are logged at warn with the name, never with the
 * connection's address or credentials. `kind` names the connector in messages (`SQL`, `SMTP`).
 * A tenant's service reaches only its tenant's connections: `crm` from `acme/orders` is looked up
 * as `acme/crm` (docs/tenants.md).
 */
export function connectionForService<C>(kind: string, name: string, lookup: (qualified: string) => C | undefined, allowedServices: (conn: C) => readonly string[] | undefined, ctx: HostCallContext): C {
  const found = lookup(scopedFor(ctx.service, name));
  let refusal: SvcError | undefined;
  if (found === undefined) refusal = new SvcError('NOT_FOUND', `No ${kind} connection named '${name}'`);
  else {
    const allowed = allowedServices(found);
    if (allowed !== undefined && !allowed.includes(ctx.service)) refusal = new SvcError('FORBIDDEN', `Service '${ctx.service}' may not use the ${kind} connection '${name}'`);
  }
  if (refusal) {
    ctx.log.warn({ connection: name, refused: refusal.code }, `${kind} connection refused: ${refusal.details}`);
    throw refusal;
  }
  return found as C;
}
