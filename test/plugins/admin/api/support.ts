import { startKernel, type StartOptions, type TestKernel } from '../../../helpers/kernel.ts';

export const ADMIN_PASSWORD = 'admin-test-password';

export const echoService = `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ user: ctx.user?.username ?? null }) });\n`;

export interface AdminKernel extends TestKernel {
  /** http://127.0.0.1:PORT of the admin listener. */
  admin: string;
  logs: Array<Record<string, unknown>>;
}

/** A kernel listening on real sockets (channels and admin, both on port 0), the admin password set by env. */
export async function startAdmin(opts: Partial<StartOptions> & { config?: string } = {}): Promise<AdminKernel> {
  const logs: Array<Record<string, unknown>> = opts.logs ?? [];
  const k = await startKernel({
    ...opts,
    config: opts.config ?? '',
    services: { 'echo.ts': echoService, ...opts.services },
    listen: true,
    logs,
    env: { SVC_ADMIN_PASSWORD: ADMIN_PASSWORD, ...opts.env },
  });
  const line = logs.find((l) => l.msg === 'svc admin listening');
  if (!line) throw new Error('the admin listener did not start');
  return Object.assign(k, { admin: String(line.address), logs });
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** A client of the admin API: a session (cookie + CSRF token) after login, or a bearer key. */
export class AdminClient {
  cookie: string | undefined;
  csrf: string | undefined;
  bearer: string | undefined;

  constructor(readonly base: string) {}

  async login(password = ADMIN_PASSWORD): Promise<Reply> {
    const r = await this.send('POST', '/admin/api/login', { username: 'admin', password });
    if (r.status === 200) {
      this.cookie = (r.headers.get('set-cookie') ?? '').split(';')[0];
      this.csrf = r.body.csrfToken;
    }
    return r;
  }

  async send(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.cookie) headers.cookie = this.cookie;
    if (this.csrf && method !== 'GET' && !('x-csrf-token' in extra)) headers['x-csrf-token'] = this.csrf;
    if (this.bearer) headers.authorization = `Bearer ${this.bearer}`;
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* YAML or text */
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  }

  get = (path: string) => this.send('GET', path);
  post = (path: string, body: unknown) => this.send('POST', path, body);
  put = (path: string, body: unknown) => this.send('PUT', path, body);
  del = (path: string) => this.send('DELETE', path);
}

export function resourcePath(section: string, name?: string): string {
  return `/admin/api/resources/${section}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/** Calls a channel on the channel listener. */
export async function callChannel(k: TestKernel, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(k.url! + path, { headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body };
}

export const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
