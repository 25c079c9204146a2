// The Dashboard's tenant pages: usage per tenant, and the accounts and API keys a role manages.
// Each returns the nodes of its page; app.js draws them.
import { api, ApiError } from './client.js';
import { el, h1, showIssues } from './form.js';

const count = (n) => String(n ?? 0);

/** CPU of the last minute against the tenant's quota, or what is missing. */
function cpuText(cpu) {
  const used = cpu.used_ms_last_minute === null ? 'no calls yet' : `${cpu.used_ms_last_minute} ms`;
  return cpu.quota_ms_per_minute === null ? `${used} (no quota)` : `${used} of ${cpu.quota_ms_per_minute} ms per minute`;
}

/** Calls, errors, throttled calls and CPU against quota, per tenant the caller sees (its own for a tenant's account). */
export async function usageView(me) {
  const tenants = await api.usage();
  const row = (t) =>
    el(
      'tr',
      { 'data-tenant': t.tenant },
      el('td', { text: t.tenant }),
      el('td', { 'data-column': 'calls', text: count(t.calls) }),
      el('td', { 'data-column': 'errors', class: t.errors ? 'bad' : '', text: count(t.errors) }),
      el('td', { 'data-column': 'throttled', text: count(t.throttled) }),
      el('td', { 'data-column': 'cpu', text: cpuText(t.cpu) }),
    );
  const services = (t) =>
    t.services.length
      ? el('table', { class: 'list', 'data-services': t.tenant }, el('tr', {}, ['service', 'calls', 'errors', 'throttled'].map((x) => el('th', { text: x }))), t.services.map((s) => el('tr', {}, el('td', { text: s.service }), el('td', { text: count(s.calls) }), el('td', { text: count(s.errors) }), el('td', { text: count(s.throttled) }))))
      : el('p', { class: 'help', text: `No calls of ${t.tenant}'s services on this node yet.` });
  return [
    h1(me.tenant ? `Tenant ${me.tenant}` : 'Tenants'),
    el('p', { class: 'help', text: "Calls of the tenant's services on this node since it started, by outcome; CPU of its isolates in the last minute against its quota." }),
    el('table', { class: 'list', id: 'usage' }, el('tr', {}, ['tenant', 'calls', 'errors', 'throttled', 'CPU'].map((x) => el('th', { text: x }))), tenants.map(row)),
    ...tenants.flatMap((t) => [el('h2', { text: `${t.tenant}: services` }), services(t)]),
  ];
}

const ROLE_HELP = { platform: 'everything', owner: "the tenant's resources, ops, accounts and keys", developer: "the tenant's resources and ops", viewer: "reads the tenant's resources" };

/** A small form whose submit runs `submit(values)`; the server's issues are shown at their fields, its refusal in the flash. */
function form(id, fields, label, submit, failed) {
  const issues = el('div', { class: 'issues' });
  const node = el(
    'form',
    { class: 'entry', id },
    fields.map((f) => el('div', { class: 'field' }, el('label', { for: f.input.id, text: f.label }), f.input, el('div', { class: 'field-error', 'data-path': f.name }))),
    issues,
    el('button', { type: 'submit', text: label }),
  );
  node.addEventListener('submit', async (e) => {
    e.preventDefault();
    showIssues(node, [], issues);
    const values = Object.fromEntries(fields.filter((f) => f.input.value !== '').map((f) => [f.name, f.input.value]));
    try {
      await submit(values);
    } catch (err) {
      if (err instanceof ApiError && err.issues.length) showIssues(node, err.issues, issues);
      failed(err);
    }
  });
  return node;
}

/** Role (and for a platform administrator, tenant) inputs: a tenant's owner gives its tenant's roles only. */
function grantFields(me, prefix) {
  const roles = me.tenant ? ['developer', 'viewer', 'owner'] : ['platform', 'owner', 'developer', 'viewer'];
  const role = el('select', { id: `${prefix}-role`, name: 'role' }, roles.map((r) => el('option', { value: r, text: `${r}: ${ROLE_HELP[r]}` })));
  const fields = [{ name: 'role', label: 'role', input: role }];
  if (!me.tenant) fields.push({ name: 'tenant', label: 'tenant (for a tenant role)', input: el('input', { type: 'text', id: `${prefix}-tenant`, name: 'tenant' }) });
  return fields;
}

/** Accounts and API keys: a platform administrator's all, a tenant owner's those of its tenant. */
export async function accountsView(me, { redraw, flash, failed }) {
  const [users, keys] = await Promise.all([api.users(), api.keys()]);
  const act = (fn, message) => async () => {
    try {
      await fn();
      flash(message);
      await redraw();
    } catch (err) {
      failed(err);
    }
  };
  const remove = (kind, name) => {
    const b = el('button', { type: 'button', class: 'link', text: 'Delete', 'data-action': `delete-${kind}`, 'data-name': name });
    b.addEventListener('click', () => confirm(`Delete ${kind} '${name}'?`) && act(() => (kind === 'account' ? api.removeUser(name) : api.removeKey(name)), `${kind} '${name}' deleted`)());
    return b;
  };
  const grantRow = (x, kind) => el('tr', { 'data-name': x.name }, el('td', { text: x.name }), el('td', { text: x.role }), el('td', { text: x.tenant ?? '(platform)' }), el('td', {}, x.name === 'admin' ? '' : remove(kind, x.name)));
  const head = () => el('tr', {}, ['name', 'role', 'tenant', ''].map((x) => el('th', { text: x })));
  const keyOut = el('div', { id: 'new-key' });
  const addUser = form(
    'add-user',
    [{ name: 'name', label: me.tenant ? `name (logs in as ${me.tenant}/name)` : 'name', input: el('input', { type: 'text', id: 'user-name', name: 'name' }) }, { name: 'password', label: 'password (8 characters or more)', input: el('input', { type: 'password', id: 'user-password', name: 'password', autocomplete: 'new-password' }) }, ...grantFields(me, 'user')],
    'Add account',
    async (values) => {
      const made = await api.addUser(values);
      flash(`account '${made.name}' (${made.role}) created`);
      await redraw();
    },
    failed,
  );
  const addKey = form(
    'add-key',
    [{ name: 'name', label: 'name', input: el('input', { type: 'text', id: 'key-name', name: 'name' }) }, ...grantFields(me, 'key')],
    'Create key',
    async (values) => {
      const made = await api.addKey(values);
      keyOut.replaceChildren(el('p', { text: `API key '${made.name}' (${made.role}); shown once, send it as Authorization: Bearer KEY:` }), el('pre', { class: 'json', id: 'key-value', text: made.key }));
    },
    failed,
  );
  return [
    h1(me.tenant ? `Accounts of ${me.tenant}` : 'Accounts'),
    el('table', { class: 'list', id: 'users' }, head(), users.map((u) => grantRow(u, 'account'))),
    el('h2', { text: 'Add an account' }),
    addUser,
    el('h2', { text: 'API keys' }),
    el('table', { class: 'list', id: 'keys' }, head(), keys.map((x) => grantRow(x, 'API key'))),
    el('h2', { text: 'Create an API key' }),
    addKey,
    keyOut,
  ];
}
