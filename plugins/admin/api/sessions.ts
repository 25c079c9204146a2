import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../../sdk/plugin/index.ts';

export const SESSION_COOKIE = 'svc_admin_session';

export interface Session {
  user: string;
  csrfToken: string;
  expiresAt: number;
}

/**
 * Server-side sessions, in memory (a restart logs everyone out). The map is keyed by a digest
 * of the cookie value, so a memory dump of the map alone does not hand out sessions.
 */
export class Sessions {
  private readonly byDigest = new Map<string, Session>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: () => number,
  ) {}

  create(user: string): { token: string; session: Session } {
    this.sweep();
    const token = randomBytes(32).toString('base64url');
    const session = { user, csrfToken: randomBytes(24).toString('base64url'), expiresAt: this.clock.now() + this.ttlMs() };
    this.byDigest.set(digest(token), session);
    return { token, session };
  }

  get(token: string | undefined): Session | undefined {
    if (token === undefined || token === '') return undefined;
    const key = digest(token);
    const session = this.byDigest.get(key);
    if (session === undefined) return undefined;
    if (session.expiresAt <= this.clock.now()) {
      this.byDigest.delete(key);
      return undefined;
    }
    return session;
  }

  end(token: string | undefined): void {
    if (token !== undefined) this.byDigest.delete(digest(token));
  }

  /** A new password ends every session. */
  endAll(): void {
    this.byDigest.clear();
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [key, s] of this.byDigest) if (s.expiresAt <= now) this.byDigest.delete(key);
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

/** Failed logins per client address within a sliding minute. */
export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: () => number,
  ) {}

  /** Seconds until the address may try again; 0 when it may now. */
  retryAfter(address: string): number {
    const recent = this.recent(address);
    if (recent.length < this.perMinute()) return 0;
    return Math.max(1, Math.ceil((recent[0]! + 60_000 - this.clock.now()) / 1000));
  }

  failed(address: string): void {
    // Failures from many addresses must not grow the map without bound: past the cap, old ones go.
    if (this.failures.size >= MAX_TRACKED) for (const key of [...this.failures.keys()]) this.recent(key);
    const recent = this.recent(address);
    recent.push(this.clock.now());
    this.failures.set(address, recent);
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }

  private recent(address: string): number[] {
    const since = this.clock.now() - 60_000;
    const list = (this.failures.get(address) ?? []).filter((t) => t > since);
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
