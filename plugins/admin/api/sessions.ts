import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../sdk/plugin/index.ts';
import type { Role } from './roles.ts';

export const SESSION_COOKIE = 'svc_admin_session';

export interface Session {
  user: string;
  role: Role;
  tenant: string | undefined;
  csrfToken: string;
  /** On the wall clock: what the login answer shows. */
  expiresAt: number;
  /** The same end on the monotonic clock (`elapsed`), which a wall clock set back does not move. */
  expiresAtElapsed: number;
}

/** Monotonic milliseconds: durations measured on it survive the wall clock being set. */
const monotonic = () => performance.now();

/**
 * Server-side sessions, in memory (a restart logs everyone out). The map is keyed by a digest
 * of the cookie value, so a memory dump of the map alone does not hand out sessions.
 *
 * A session's time to live is measured on the wall clock (`clock`, which runs on while the
 * machine is suspended) and on the monotonic one (`elapsed`, which a wall clock set back does
 * not move); either ends it.
 */
export class Sessions {
  private readonly byDigest = new Map<string, Session>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: () => number,
    private readonly elapsed: () => number = monotonic,
  ) {}

  create(grant: { name: string; role: Role; tenant: string | undefined }): { token: string; session: Session } {
    this.sweep();
    const token = randomBytes(32).toString('base64url');
    const ttl = this.ttlMs();
    const session = { user: grant.name, role: grant.role, tenant: grant.tenant, csrfToken: randomBytes(24).toString('base64url'), expiresAt: this.clock.now() + ttl, expiresAtElapsed: this.elapsed() + ttl };
    this.byDigest.set(digest(token), session);
    return { token, session };
  }

  private over(session: Session, now: number, elapsed: number): boolean {
    return session.expiresAt <= now || session.expiresAtElapsed <= elapsed;
  }

  get(token: string | undefined): Session | undefined {
    if (token === undefined || token === '') return undefined;
    const key = digest(token);
    const session = this.byDigest.get(key);
    if (session === undefined) return undefined;
    if (this.over(session, this.clock.now(), this.elapsed())) {
      this.byDigest.delete(key);
      return undefined;
    }
    return session;
  }

  end(token: string | undefined): void {
    if (token !== undefined) this.byDigest.delete(digest(token));
  }

  /** A new password, a deleted account: that account's sessions end. */
  endUser(user: string): void {
    for (const [key, s] of this.byDigest) if (s.user === user) this.byDigest.delete(key);
  }

  private sweep(): void {
    const now = this.clock.now();
    const elapsed = this.elapsed();
    for (const [key, s] of this.byDigest) if (this.over(s, now, elapsed)) this.byDigest.delete(key);
  }
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

export function csrfMatches(session: Session, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && timingSafeEqual(a, b);
}

const MAX_TRACKED = 10_000;

/** One failed login, on both clocks. */
interface Failure {
  at: number;
  atElapsed: number;
}

const THROTTLE_WINDOW_MS = 60_000;

/**
 * Failed logins per client address within a sliding minute. A failure is forgotten once a
 * minute has passed on either clock, so a wall clock set back does not lock an address out for
 * the length of the jump.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, Failure[]>();

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: () => number,
    private readonly elapsed: () => number = monotonic,
  ) {}

  /** Seconds until the address may try again; 0 when it may now. */
  retryAfter(address: string): number {
    const recent = this.recent(address);
    if (recent.length < this.perMinute()) return 0;
    const oldest = recent[0]!;
    const left = Math.min(oldest.at + THROTTLE_WINDOW_MS - this.clock.now(), oldest.atElapsed + THROTTLE_WINDOW_MS - this.elapsed());
    return Math.max(1, Math.ceil(left / 1000));
  }

  failed(address: string): void {
    // Failures from many addresses must not grow the map without bound: past the cap, old ones go.
    if (this.failures.size >= MAX_TRACKED) for (const key of [...this.failures.keys()]) this.recent(key);
    const recent = this.recent(address);
    recent.push({ at: this.clock.now(), atElapsed: this.elapsed() });
    this.failures.set(address, recent);
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }

  private recent(address: string): Failure[] {
    const since = this.clock.now() - THROTTLE_WINDOW_MS;
    const sinceElapsed = this.elapsed() - THROTTLE_WINDOW_MS;
    const list = (this.failures.get(address) ?? []).filter((f) => f.at > since && f.atElapsed > sinceElapsed);
    if (list.length === 0) this.failures.delete(address);
    return list;
  }
}

/** `name=value` pairs of a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookie(token: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/admin; Max-Age=${maxAgeSeconds}`;
}

export function clearedCookie(): string {
  return `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/admin; Max-Age=0`;
}
