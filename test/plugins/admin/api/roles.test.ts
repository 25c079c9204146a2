import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES, routeKey } from '../../../../plugins/admin/api/routes.ts';
import { ADMIN_PASSWORD, AdminClient, resourcePath, startAdmin, type AdminKernel, type Reply } from './support.ts';
import { TENANTS_CONFIG, type MatrixRole, USER_PASSWORD, USERS, createMatrixAccounts, loginAs } from './tenants.ts';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';

// Tenants do not start on Node 20 (docs/tenants.md): these suites run on Node 22 and 24.
describe.runIf(TENANTS_RUN_HERE)('with tenants', () => {

/**
 * Every admin API endpoint × role (platform, owner, developer, viewer) × own or other tenant,
 * each cell as the README's table documents it. The endpoint list is the one the listener
 * registers (routes.ts): a new endpoint without a row in the README, or without a request here,
 * fails.
 */

type Target = 'acme' | 'beta';
const ROLES: MatrixRole[] = ['platform', 'owner', 'developer', 'viewer'];

interface Cell {
  method: string;
  path: string;
  body?: unknown;
  /** Whether the answer shows the target tenant's things (list endpoints). */
  seen?: (r: Reply) => boolean;
  /** A client of its own (login, logout); otherwise the role's session. */
  client?: AdminClient;
}
type Case = (role: MatrixRole, t: Target) => Promise<Cell>;

/** The README's table: endpoint → role → cell text. */
function documentedCells(): Map<string, Record<MatrixRole, string>> {
  const readme = readFileSync(new URL('../../../../plugins/admin/api/README.md', import.meta.url), 'utf8');
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => /^\| endpoint \| platform \| owner \| developer \| viewer \|$/.test(l));
  expect(start, 'the README has the table of endpoints by role').toBeGreaterThan(0);
  const rows = new Map<string, Record<MatrixRole, string>>();
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [endpoint, platform, owner, developer, viewer] = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.set(endpoint!.replace(/`/g, ''), { platform: platform!, owner: owner!, developer: developer!, viewer: viewer! });
  }
  return rows;
}

/** A cell's expectation for one target: `S`, or `own / other`; `hidden` is a 200 without the other tenant's items. */
function expectation(cell: string, role: MatrixRole, t: Target): { status: number; hidden: boolean } {
  const parts = cell.split(' / ');
  const text = role === 'platform' || parts.length === 1 ? parts[0]! : parts[t === 'acme' ? 0 : 1]!;
  return text === 'hidden' ? { status: 200, hidden: true } : { status: Number(text), hidden: false };
}

let k: AdminKernel;
let admin: AdminClient;
const sessions = new Map<MatrixRole, AdminClient>();
let counter = 0;

const channelEntry = (t: Target, i: number) => ({ name: `${t}/c${i}`, url_path: `/t/${t}/c${i}`, service: `${t}/orders`, security: 'none' });
async function makeChannel(t: Target): Promise<string> {
  const entry = channelEntry(t, ++counter);
  expect((await admin.post(resourcePath('channel_rest'), entry)).status).toBe(201);
  return entry.name;
}
const names = (r: Reply, t: Target) => (r.body.items as Array<{ name: string }>).some((i) => i.name.startsWith(`${t}/`));
const ofTenant = (r: Reply, t: Target) => (r.body.items as Array<{ tenant: string | null }>).some((i) => i.tenant === t);
const pathsOf = (r: Reply, t: Target) => Object.keys(r.body.paths).some((p) => p.startsWith(`/t/${t}/`));

const CASES: Record<string, Case> = {
  'POST /login': async (role) => ({ method: 'POST', path: '/login', body: { username: USERS[role], password: role === 'platform' ? ADMIN_PASSWORD : USER_PASSWORD }, client: new AdminClient(k.admin) }),
  'POST /logout': async (role) => ({ method: 'POST', path: '/logout', client: await loginAs(k, role) }),
  'GET /session': async () => ({ method: 'GET', path: '/session' }),
  'GET /resources': async () => ({ method: 'GET', path: '/resources' }),
  'GET /resources/{section}': async (_r, t) => ({ method: 'GET', path: '/resources/channel_rest', seen: (r) => names(r, t) }),
  'POST /resources/{section}': async (_r, t) => ({ method: 'POST', path: '/resources/channel_rest', body: channelEntry(t, ++counter) }),
  'GET /resources/{section}/{name}': async (_r, t) => ({ method: 'GET', path: `/resources/channel_rest/${encodeURIComponent(`${t}/orders`)}` }),
  'PUT /resources/{section}/{name}': async (_r, t) => {
    const name = await makeChannel(t);
    return { method: 'PUT', path: `/resources/channel_rest/${encodeURIComponent(name)}`, body: { ...channelEntry(t, counter), method: 'GET' } };
  },
  'DELETE /resources/{section}/{name}': async (_r, t) => ({ method: 'DELETE', path: `/resources/channel_rest/${encodeURIComponent(await makeChannel(t))}` }),
  'GET /overrides': async (_r, t) => ({ method: 'GET', path: '/overrides', seen: (r) => names(r, t) }),
  'DELETE /overrides/{section}/{name}': async (_r, t) => ({ method: 'DELETE', path: `/overrides/channel_rest/${encodeURIComponent(await makeChannel(t))}` }),
  'GET /ops': async () => ({ method: 'GET', path: '/ops' }),
  'POST /ops/{op}': async (_r, t) => ({ method: 'POST', path: '/ops/limits.clear', body: { kind: 'channel', name: `${t}/orders` } }),
  'GET /audit': async (_r, t) => ({ method: 'GET', path: '/audit?limit=1000', seen: (r) => ofTenant(r, t) }),
  'GET /usage': async (_r, t) => ({ method: 'GET', path: '/usage', seen: (r) => r.body.tenants.some((u: { tenant: string }) => u.tenant === t) }),
  'GET /export': async (_r, t) => ({ method: 'GET', path: '/export', seen: (r) => r.text.includes(`name: ${t}/orders`) }),
  'POST /import': async (_r, t) => ({ method: 'POST', path: '/import', body: { channel_rest: [channelEntry(t, ++counter)] } }),
  'GET /openapi.json': async () => ({ method: 'GET', path: '/openapi.json' }),
  'GET /spec/openapi.json': async (_r, t) => ({ method: 'GET', path: '/spec/openapi.json', seen: (r) => pathsOf(r, t) }),
  'GET /spec/channels.json': async (_r, t) => ({ method: 'GET', path: '/spec/channels.json', seen: (r) => pathsOf(r, t) }),
  'GET /users': async (_r, t) => ({ method: 'GET', path: '/users', seen: (r) => ofTenant(r, t) }),
  'POST /users': async (_r, t) => ({ method: 'POST', path: '/users', body: { name: `u${++counter}`, password: USER_PASSWORD, role: 'viewer', tenant: t } }),
  'DELETE /users/{name}': async (_r, t) => {
    const made = await admin.post('/admin/api/users', { name: `u${++counter}`, password: USER_PASSWORD, role: 'viewer', tenant: t });
    expect(made.status).toBe(201);
    return { method: 'DELETE', path: `/users/${encodeURIComponent(made.body.name)}` };
  },
  'GET /keys': async (_r, t) => ({ method: 'GET', path: '/keys', seen: (r) => ofTenant(r, t) }),
  'POST /keys': async (_r, t) => ({ method: 'POST', path: '/keys', body: { name: `k${++counter}`, role: 'viewer', tenant: t } }),
  'DELETE /keys/{name}': async (_r, t) => {
    const made = await admin.post('/admin/api/keys', { name: `k${++counter}`, role: 'viewer', tenant: t });
    expect(made.status).toBe(201);
    return { method: 'DELETE', path: `/keys/${encodeURIComponent(made.body.name)}` };
  },
};

beforeAll(async () => {
  k = await startAdmin({ config: TENANTS_CONFIG });
  admin = new AdminClient(k.admin);
  expect((await admin.login()).status).toBe(200);
  await createMatrixAccounts(admin);
  for (const role of ROLES) sessions.set(role, await loginAs(k, role));
  // Rows of both tenants in every list: admin edits (overrides, audit rows) and keys.
  for (const t of ['acme', 'beta'] as const) {
    await makeChannel(t);
    expect((await admin.post('/admin/api/keys', { name: 'ci', role: 'viewer', tenant: t })).status).toBe(201);
  }
}, 60_000);
afterAll(() => k?.close());

describe('every endpoint × role × own or other tenant, as the README documents it', () => {
  it('the README has one row per endpoint the listener registers, and this test a request for each', () => {
    const documented = [...documentedCells().keys()].sort();
    const registered = ADMIN_ROUTES.map(routeKey).sort();
    expect(documented).toEqual(registered);
    expect(Object.keys(CASES).sort()).toEqual(registered);
  });

  for (const route of ADMIN_ROUTES) {
    const key = routeKey(route);
    it(key, async () => {
      const cells = documentedCells().get(key)!;
      const seen: string[] = [];
      for (const role of ROLES) {
        for (const t of ['acme', 'beta'] as const) {
          const want = expectation(cells[role], role, t);
          const cell = await CASES[key]!(role, t);
          const client = cell.client ?? sessions.get(role)!;
          const r = await client.send(cell.method, `/admin/api${cell.path}`, cell.body);
          const where = `${role} on ${t === 'acme' ? 'its own tenant' : 'the other tenant'} (${t}): ${r.text.slice(0, 300)}`;
          expect(r.status, where).toBe(want.status);
          if (r.status >= 400) expect(r.body.cid, where).toBe(r.headers.get('x-svc-cid'));
          if (cell.seen && r.status === 200) expect(cell.seen(r), `${where}: shows ${t}'s items`).toBe(!want.hidden);
          seen.push(`${role}/${t}:${r.status}`);
        }
      }
      expect(seen).toHaveLength(ROLES.length * 2);
    });
  }
});
});
