import { hashSecret, randomSecret, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import { checkLogin, keyOwner } from './credential.ts';
import { writeAudit } from './store.ts';
import type { Principal } from './roles.ts';
import type { AdminOptions } from './schema.ts';
import { cookieValue, csrfMatches, LoginThrottle, SESSION_COOKIE, Sessions, type Session } from './sessions.ts';

/** Who made a request: an account through a session, or an API key; with the reach of its role. */
export interface Actor extends Principal {
  session: Session | undefined;
}

export interface RequestAuth {
  method: string;
  address: string;
  authorization: string | undefined;
  cookie: string | undefined;
  csrf: string | undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Login, sessions with CSRF tokens, the login throttle and bearer keys. */
export class AdminAuth {
  readonly sessions: Sessions;
  private readonly throttle: LoginThrottle;
  private dummy: Promise<string> | undefined;

  constructor(
    private readonly kernel: KernelApi,
    options: () => AdminOptions,
  ) {
    this.sessions = new Sessions(kernel.clock, () => options().session_ttl_minutes * 60_000);
    this.throttle = new LoginThrottle(kernel.clock, () => options().login_failures_per_minute);
  }

  async login(address: string, username: string, password: string): Promise<{ token: string; session: Session }> {
    const wait = this.throttle.retryAfter(address);
    if (wait > 0) throw new SvcError('TOO_MANY_REQUESTS', 'Too many failed logins; try again later', { headers: { 'Retry-After': String(wait) } });
    const grant = await checkLogin(this.kernel.store, username, password, () => (this.dummy ??= hashSecret(randomSecret())));
    if (!grant) {
      this.throttle.failed(address);
      // The name tried is no secret, and tells an operator which account is under attack. In the
      // audit log as well (the throttle bounds its rows: login_failures_per_minute per address).
      this.kernel.log.warn({ address, user: username }, 'admin login refused');
      const tenant = username.includes('/') ? username.slice(0, username.indexOf('/')) : undefined;
      await this.kernel.store.transaction((tx) => writeAudit(tx, { at: this.kernel.clock.now(), actor: username.slice(0, 200), tenant, action: 'login (failed)', detail: { address } }), { durable: true });
      throw new SvcError('UNAUTHORIZED', 'Wrong username or password');
    }
    this.throttle.succeeded(address);
    this.kernel.log.info({ address, user: grant.name, role: grant.role, tenant: grant.tenant }, 'admin login');
    return this.sessions.create(grant);
  }

  logout(cookie: string | undefined): void {
    this.sessions.end(cookieValue(cookie, SESSION_COOKIE));
  }

  /** The request's actor; 401 without valid credentials, 403 for a change without the session's CSRF token. */
  async identify(req: RequestAuth): Promise<Actor> {
    if (req.authorization !== undefined) {
      const m = /^Bearer\s+(\S+)$/i.exec(req.authorization);
      const key = m ? await keyOwner(this.kernel.store, m[1]!) : undefined;
      if (key === undefined) throw new SvcError('UNAUTHORIZED', 'Unknown or malformed API key', { headers: { 'WWW-Authenticate': 'Bearer realm="svc admin"' } });
      return { who: `key:${key.name}`, role: key.role, tenant: key.tenant, session: undefined };
    }
    const session = this.sessions.get(cookieValue(req.cookie, SESSION_COOKIE));
    if (session === undefined) throw new SvcError('UNAUTHORIZED', 'Log in first (POST /admin/api/login), or send an API key');
    // SameSite=Strict already keeps other sites' requests from carrying the cookie; the token is the second lock.
    if (!SAFE_METHODS.has(req.method) && !csrfMatches(session, req.csrf)) throw new SvcError('FORBIDDEN', 'Missing or wrong X-CSRF-Token header (the token login returned)');
    return { who: session.user, role: session.role, tenant: session.tenant, session };
  }
}
