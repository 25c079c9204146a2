// The admin API as the Dashboard uses it. Same origin; the session cookie is HttpOnly, and every
// change carries the CSRF token the session was given.

let csrf = sessionStorage.getItem('svc-csrf') ?? '';

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.details ?? `HTTP ${status}`);
    this.status = status;
    /** Seconds to wait before trying again (a 429's Retry-After), or undefined. */
    this.retryAfter = retryAfter;
    this.body = body;
    this.issues = body?.issues ?? [];
    this.cid = body?.cid;
  }
}

async function call(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  const res = await fetch(`/admin/api${path}`, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = { details: text };
  }
  if (!res.ok) {
    const wait = Number(res.headers.get('retry-after'));
    throw new ApiError(res.status, json, Number.isFinite(wait) && wait > 0 ? wait : undefined);
  }
  return json;
}

const seg = encodeURIComponent;

export const api = {
  async session() {
    const s = await call('GET', '/session');
    if (s?.csrfToken) {
      csrf = s.csrfToken;
      sessionStorage.setItem('svc-csrf', csrf);
    }
    return s;
  },
  async login(password, username) {
    const s = await call('POST', '/login', username === undefined ? { password } : { username, password });
    csrf = s?.csrfToken ?? '';
    sessionStorage.setItem('svc-csrf', csrf);
    return s;
  },
  async logout() {
    await call('POST', '/logout').catch(() => undefined);
    csrf = '';
    sessionStorage.removeItem('svc-csrf');
  },
  catalogue: () => call('GET', '/resources'),
  list: (section) => call('GET', `/resources/${seg(section)}`).then((r) => r.items),
  get: (section, name) => call('GET', `/resources/${seg(section)}/${seg(name)}`).then((r) => r.entry),
  /** The entry with `secretsSet`, the write-only fields that hold a value. */
  view: (section, name) => call('GET', `/resources/${seg(section)}/${seg(name)}`),
  create: (section, entry) => call('POST', `/resources/${seg(section)}`, entry),
  update: (section, name, entry) => call('PUT', `/resources/${seg(section)}/${seg(name)}`, entry),
  remove: (section, name) => call('DELETE', `/resources/${seg(section)}/${seg(name)}`),
  ops: () => call('GET', '/ops').then((r) => r.items),
  op: (name, args = {}) => call('POST', `/ops/${seg(name)}`, args).then((r) => r.result),
  audit: () => call('GET', '/audit').then((r) => r.items),
  usage: () => call('GET', '/usage').then((r) => r.tenants),
  users: () => call('GET', '/users').then((r) => r.items),
  addUser: (user) => call('POST', '/users', user),
  removeUser: (name) => call('DELETE', `/users/${seg(name)}`),
  keys: () => call('GET', '/keys').then((r) => r.items),
  addKey: (key) => call('POST', '/keys', key),
  removeKey: (name) => call('DELETE', `/keys/${seg(name)}`),
};
