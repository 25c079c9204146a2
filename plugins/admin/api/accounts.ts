import type { z } from 'zod';
import { hashSecret, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { AdminAuth } from './auth.ts';
import { addUser, deleteKey, deleteUser, findKey, findUser, listKeys, listUsers, newKey, storeKey, type Grant } from './credential.ts';
import { IssuesError } from './errors.ts';
import { accountName, grantIssue, reaches, type Principal } from './roles.ts';
import type { newKeySchema, newUserSchema } from './schema.ts';
import type { TenantScope } from './scope.ts';
import { writeAudit } from './store.ts';

type NewUser = z.infer<typeof newUserSchema>;
type NewKey = z.infer<typeof newKeySchema>;

/**
 * Accounts and API keys through the admin API: platform administrators manage those of any
 * tenant and the platform's; a tenant's owner those of its tenant only, with tenant roles.
 */
export class AdminAccounts {
  constructor(
    private readonly kernel: KernelApi,
    private readonly auth: AdminAuth,
    private readonly scope: TenantScope,
  ) {}

  users(p: Principal) {
    return listUsers(this.kernel.store, p.tenant);
  }

  async addUser(p: Principal, body: NewUser): Promise<Grant> {
    const grant = this.grant(p, body, 'user');
    await addUser(this.kernel.store, { ...grant, hash: await hashSecret(body.password) }, this.kernel.clock.now());
    await this.audit(p, 'create-user', grant);
    return grant;
  }

  /** Deletes an account of the principal's reach (404 otherwise) and ends its sessions. */
  async deleteUser(p: Principal, name: string): Promise<void> {
    const user = await findUser(this.kernel.store, name);
    if (!user || !reaches(p, user.name)) throw new SvcError('NOT_FOUND', userNotFound(name));
    if (!(await deleteUser(this.kernel.store, user.name))) throw new SvcError('NOT_FOUND', userNotFound(name));
    this.auth.sessions.endUser(user.name);
    await this.audit(p, 'delete-user', user);
  }

  keys(p: Principal) {
    return listKeys(this.kernel.store, p.tenant);
  }

  /** A new key: the whole key is in this answer only (stored as a digest). */
  async addKey(p: Principal, body: NewKey): Promise<Grant & { key: string }> {
    const grant = this.grant(p, body, 'key');
    const key = newKey();
    await storeKey(this.kernel.store, { ...grant, id: key.id, digest: key.digest }, this.kernel.clock.now());
    await this.audit(p, 'create-key', grant);
    return { ...grant, key: key.key };
  }

  async deleteKey(p: Principal, name: string): Promise<void> {
    const key = await findKey(this.kernel.store, name);
    if (!key || !reaches(p, key.name) || !(await deleteKey(this.kernel.store, key.name))) throw new SvcError('NOT_FOUND', keyNotFound(name));
    await this.audit(p, 'delete-key', key);
  }

  /** The stored name a request's `{name}` means (404 for another tenant's). */
  resolve(p: Principal, kind: 'user' | 'key', name: string): string {
    return this.scope.resolve(p, name, kind === 'user' ? userNotFound : keyNotFound);
  }

  /**
   * What the new account or key may reach. A tenant's owner gives roles of its own tenant (a
   * tenant named other than its own is a 404, like any name of another tenant); a platform
   * administrator any role, of a tenant the config declares.
   */
  private grant(p: Principal, body: { name: string; role: Grant['role']; tenant?: string | undefined }, kind: 'user' | 'key'): Grant {
    let tenant = body.tenant;
    if (p.tenant !== undefined) {
      if (tenant !== undefined && tenant !== p.tenant) throw new SvcError('NOT_FOUND', `No tenant '${tenant}'`);
      if (body.role === 'platform') throw new SvcError('FORBIDDEN', "A tenant's owner gives roles of its tenant only (owner, developer, viewer)");
      tenant = p.tenant;
    }
    const grant = { name: accountName(tenant, body.name), role: body.role, tenant };
    const issue = grantIssue(grant, (t) => this.scope.declared(t));
    if (issue) throw new IssuesError('INVALID_INPUT', `Invalid ${kind}`, [{ path: [issue.startsWith('no tenant') ? 'tenant' : 'role'], message: issue }]);
    return grant;
  }

  private audit(p: Principal, action: string, subject: Grant): Promise<void> {
    return this.kernel.store.transaction(
      (tx) => writeAudit(tx, { at: this.kernel.clock.now(), actor: p.who, tenant: subject.tenant, action, name: subject.name, detail: { role: subject.role } }),
      { durable: true },
    );
  }
}

const userNotFound = (name: string) => `No account named '${name}'`;
const keyNotFound = (name: string) => `No API key named '${name}'`;
