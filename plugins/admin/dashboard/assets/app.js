// The Dashboard: hash routes, each page built from the admin API. Resource pages are generic
// (the catalogue's JSON Schemas); the runtime pages read the plugins' operations.
import { api, ApiError } from './client.js';
import { el, errorText, field, h1, link, pre, prose, showIssues } from './form.js';
import { sparkline } from './chart.js';
import { servicePage, servicesList } from './services.js';
import { accountsView, usageView } from './tenants.js';

const main = () => document.getElementById('main');
const nav = () => document.getElementById('nav');
let catalogue;
let ops = new Map();
/** Who is signed in: `{ user, role, tenant }` (tenant null for a platform administrator). */
let me;
/** A viewer reads only: the pages leave out what would change something. */
const canChange = () => me?.role !== 'viewer';
let pollTimer;
/** Bumped by each navigation: a page still loading when the operator moved on must not draw over the new one. */
let routeSeq = 0;
function show(seq, ...nodes) {
  if (seq === routeSeq) main().replaceChildren(...nodes);
}

function flash(message, kind = 'ok') {
  const box = document.getElementById('flash');
  box.className = `flash ${kind}`;
  box.textContent = message;
  if (kind === 'ok') setTimeout(() => box.textContent === message && (box.textContent = ''), 4000);
}
function failed(err) {
  flash(err instanceof ApiError ? `${err.message}${err.cid ? ` (CID ${err.cid})` : ''}` : String(err?.message ?? err), 'error');
}

async function start() {
  window.addEventListener('hashchange', route);
  document.getElementById('logout').addEventListener('click', async () => {
    await api.logout();
    location.hash = '#/login';
  });
  await route();
}

async function ensureSession() {
  try {
    me = await api.session();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return false;
    throw err;
  }
  if (!catalogue) {
    [catalogue, ops] = await Promise.all([api.catalogue(), api.ops().then((list) => new Map(list.map((o) => [o.op, o])))]);
    renderNav();
  }
  return true;
}

function renderNav() {
  const sections = catalogue.sections.map((s) => el('li', {}, link(`#/r/${encodeURIComponent(s.name)}`, s.title ?? s.name)));
  const runtime = [
    ['#/traffic', 'Traffic', 'traffic.recent'],
    ['#/services', 'Services', 'services.list'],
    ['#/pubsub', 'Pub/sub', 'pubsub.subscriptions'],
    ['#/queue', 'Queued events', 'queue.list'],
    ['#/jobs', 'Jobs', 'job.list'],
    ['#/nodes', 'Nodes', 'cluster.nodes'],
  ].filter(([, , op]) => ops.has(op));
  const administration = [
    ['#/usage', me.tenant ? `Tenant ${me.tenant}` : 'Tenants'],
    ...(me.role === 'platform' || me.role === 'owner' ? [['#/accounts', 'Accounts']] : []),
  ];
  nav().replaceChildren(
    el('h2', { text: 'Resources' }),
    el('ul', {}, sections),
    el('h2', { text: 'Runtime' }),
    el('ul', {}, runtime.map(([href, text]) => el('li', {}, link(href, text))), el('li', {}, link('#/ops', 'Operations')), el('li', {}, link('#/audit', 'Audit log')), el('li', {}, link('#/downloads', 'Downloads'))),
    el('h2', { text: 'Administration' }),
    el('ul', {}, administration.map(([href, text]) => el('li', {}, link(href, text)))),
  );
  document.getElementById('who').textContent = me.tenant ? `${me.user} (${me.role} of ${me.tenant})` : `${me.user} (${me.role})`;
  document.body.classList.add('signed-in');
}

/** A message for the page a change leads to (the one it was made on is left behind). */
let nextFlash;
function navigate(hash, message) {
  nextFlash = message;
  if (location.hash === hash) void route();
  else location.hash = hash;
}

async function route() {
  routeSeq++;
  clearInterval(pollTimer);
  // A message belongs to the page it was shown on, or to the one a change led to.
  const box = document.getElementById('flash');
  box.textContent = '';
  box.className = 'flash';
  if (nextFlash) flash(nextFlash);
  nextFlash = undefined;
  const [, page, ...rest] = (location.hash || '#/').slice(1).split('/').map(decodeURIComponent);
  try {
    if (page === 'login') return loginPage();
    const mine = routeSeq;
    if (!(await ensureSession())) return toLogin();
    // The operator moved on while the session was checked: that navigation draws the page.
    if (mine !== routeSeq) return;
    if (page === 'r' && rest.length === 1) return await listPage(rest[0]);
    if (page === 'r' && rest.length === 2) return await entryPage(rest[0], rest[1]);
    if (page === 'ops') return opsPage();
    if (page === 'traffic') return await trafficPage();
    if (page === 'services') return await servicesPage(rest[0]);
    if (page === 'pubsub') return await pubsubPage(rest[0]);
    if (page === 'queue') return await queuePage();
    if (page === 'jobs') return await (rest[0] ? jobPage(rest[0]) : jobsPage());
    if (page === 'nodes') return await nodesPage();
    if (page === 'audit') return await auditPage();
    if (page === 'usage') return await usagePage();
    if (page === 'accounts') return await accountsPage();
    if (page === 'downloads') return downloadsPage();
    if (!page) return overviewPage();
    return notFoundPage();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return toLogin();
    // The page could not be drawn (a 404): the one before it must not stay, as if it were this one.
    show(routeSeq);
    failed(err);
  }
}

/** The page asked for before the login (a link to a service, a bookmark): where the login leads. */
let afterLogin;
function toLogin() {
  if (location.hash && location.hash !== '#/login') afterLogin = location.hash;
  location.hash = '#/login';
}

function loginPage() {
  const seq = routeSeq;
  document.body.classList.remove('signed-in');
  catalogue = undefined;
  me = undefined;
  const username = el('input', { type: 'text', id: 'username', name: 'username', autocomplete: 'username', value: 'admin' });
  const password = el('input', { type: 'password', id: 'password', name: 'password', autocomplete: 'current-password' });
  const form = el(
    'form',
    { class: 'login' },
    h1('svc Dashboard'),
    el('label', { for: 'username', text: 'Account (a tenant\'s: tenant/name)' }),
    username,
    el('label', { for: 'password', text: 'Password' }),
    password,
    el('button', { type: 'submit', text: 'Log in' }),
  );
  const button = form.querySelector('button');
  const wait = el('p', { class: 'field-error', id: 'login-wait' });
  form.insertBefore(wait, button);
  // The throttle's wait (429 with Retry-After): said, and counted down, with the button held until then.
  const holdFor = (seconds) => {
    let left = seconds;
    button.disabled = true;
    const tick = () => {
      if (!button.isConnected) return;
      if (left <= 0) {
        button.disabled = false;
        wait.textContent = '';
        return;
      }
      wait.textContent = `Too many failed logins from this address: try again in ${left} s.`;
      left--;
      setTimeout(tick, 1000);
    };
    tick();
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      await api.login(password.value, username.value.trim() || undefined);
      location.hash = afterLogin ?? '#/';
      afterLogin = undefined;
    } catch (err) {
      if (err instanceof ApiError && err.status === 429 && err.retryAfter) holdFor(err.retryAfter);
      else failed(err);
    }
  });
  show(seq, form);
  password.focus();
}

/** A count of times as people say it: once, 2 times. */
const times = (n) => (n === 1 ? 'once' : `${n} times`);

/** An address the Dashboard has no page for (a mistyped or old link): said so, not shown as another page. */
function notFoundPage() {
  show(
    routeSeq,
    el(
      'div',
      { id: 'not-found' },
      h1('No such page'),
      el('p', {}, 'The Dashboard has no page at ', el('code', { text: location.hash }), '.'),
      el('p', {}, link('#/', 'Go to the overview')),
    ),
  );
}

/** An op's answer, or `undefined` when the caller may not run it (or it failed: the overview shows what it has). */
const opIf = (name, args = {}) => (ops.has(name) ? api.op(name, args).catch(() => undefined) : Promise.resolve(undefined));

/**
 * The overview: what needs attention first (a refused config file, failing channels, services
 * that do not serve, dead letters, failing jobs), then health and traffic, then the resources.
 */
async function overviewPage() {
  const seq = routeSeq;
  const [status, ready, nodes, traffic, services, dead, jobs] = await Promise.all([
    opIf('config.status'),
    fetch('/ready', { headers: { accept: 'application/json' } })
      .then(async (r) => ({ ok: r.ok, body: await r.json().catch(() => ({})) }))
      .catch(() => undefined),
    opIf('cluster.nodes'),
    opIf('traffic.stats', { seconds: 900, step: 60 }),
    opIf('services.list'),
    opIf('queue.list', { state: 'dead', limit: 1000 }),
    opIf('job.list'),
  ]);
  const banner = status?.refused
    ? el(
        'div',
        { class: 'banner bad', id: 'config-refused' },
        // A tenant's config file is refused on its own save: the banner names it.
        el('strong', { text: `${status.refused.source === status.file ? 'The config file' : `The tenant config file ${status.refused.source}`} was refused at ${status.refused.at}: the running config stays.` }),
        el('ul', {}, status.refused.issues.map((i) => el('li', { text: i.line ? `line ${i.line}: ${i.message}` : i.message }))),
      )
    : '';

  const health = el('div', { class: 'cards', id: 'health' });
  const card = (title, value, bad, detail) => health.append(el('div', { class: bad ? 'card bad' : 'card' }, el('div', { class: 'help', text: title }), el('div', { class: 'value', text: value }), detail ? el('div', { class: 'help', text: detail }) : ''));
  if (ready) card('Ready', ready.ok ? 'yes' : 'no', !ready.ok, (ready.body.checks ?? []).filter((c) => !c.ok).map((c) => `${c.name}: ${c.reason}`).join(', '));
  if (ready?.body.checks) {
    const store = ready.body.checks.find((c) => c.name === 'store');
    if (store) card('Store', store.ok ? 'answers' : 'unreachable', !store.ok);
  }
  if (status) card('Sandbox processes', String(status.sandbox.processes), status.sandbox.quarantined.length > 0, `${status.sandbox.restarts} restarts${status.sandbox.quarantined.length ? `, quarantined: ${status.sandbox.quarantined.join(', ')}` : ''}`);
  if (nodes) {
    // Only a node whose heartbeat is late is down; one stopped cleanly (a restart) is listed until forgotten, not counted against the cluster.
    const up = nodes.nodes.filter((n) => n.state === 'up');
    const down = nodes.nodes.filter((n) => n.state === 'down');
    const stopped = nodes.nodes.filter((n) => n.state === 'stopped');
    const detail = [down.length ? `down: ${down.map((n) => n.name).join(', ')}` : '', stopped.length ? `${stopped.length} stopped cleanly` : ''].filter(Boolean).join('; ');
    card('Nodes', `${up.length} of ${up.length + down.length} up`, down.length > 0, detail);
  }

  const attention = [];
  const channels = (traffic?.channels ?? []).slice().sort((a, b) => b.totals.errors_5xx - a.totals.errors_5xx || b.totals.requests - a.totals.requests);
  const failing = channels.filter((c) => c.totals.errors_5xx > 0);
  // A failing channel leads to its requests (by CID, for the log) and to its service (its state, dead letters and versions).
  const serviceOf = new Map((services ?? []).flatMap((sv) => sv.channels.map((c) => [c, sv.name])));
  for (const c of failing) {
    const sv = serviceOf.get(c.channel);
    attention.push(el('li', { class: 'bad' }, link(`#/traffic`, c.channel), ` answered 5xx ${times(c.totals.errors_5xx)} of ${c.totals.requests} in 15 minutes`, sv ? [': service ', link(`#/services/${encodeURIComponent(sv)}`, sv, { class: 'service' })] : ''));
  }
  for (const sv of (services ?? []).filter((x) => x.state !== 'serving')) attention.push(el('li', { class: 'bad' }, link(`#/services/${encodeURIComponent(sv.name)}`, sv.name), ` ${sv.state.replace('_', ' ')}${sv.error ? `: ${sv.error.split('\n')[0]}` : sv.quarantine ? `: ${sv.quarantine}` : ''}`));
  const deadByChannel = new Map();
  for (const e of dead ?? []) deadByChannel.set(e.channel ?? e.service ?? '?', (deadByChannel.get(e.channel ?? e.service ?? '?') ?? 0) + 1);
  for (const [queue, n] of deadByChannel) attention.push(el('li', { class: 'bad' }, link('#/queue', queue), ` has ${n}${dead.length >= 1000 ? '+' : ''} dead letter${n === 1 ? '' : 's'}`));
  // Connectors that are not up (/ready's connections): `idle` ones open on first use, so they are not listed.
  for (const c of (ready?.body.connections ?? []).filter((x) => x.state === 'down' || x.state === 'connecting'))
    attention.push(el('li', { class: 'bad', 'data-connection': `${c.kind}:${c.name}` }, el('strong', { text: `${c.kind} ${c.role} ${c.name}` }), ` is ${c.state}${c.reason ? `: ${c.reason}` : ''}`));
  for (const j of (jobs ?? []).filter((x) => x.lastRun && x.lastRun.state !== 'succeeded' && x.lastRun.state !== 'running')) attention.push(el('li', { class: 'bad' }, link(`#/jobs/${encodeURIComponent(j.name)}`, j.name), ` last run ${j.lastRun.state} at ${j.lastRun.tick}`));

  const trafficTable = traffic
    ? el(
        'table',
        { class: 'list', id: 'channel-health' },
        el('tr', {}, ['channel', 'requests (15 min)', '4xx', '5xx', 'p95 ms', 'requests per minute', '5xx per minute'].map((t) => el('th', { text: t }))),
        channels.map((c) =>
          el(
            'tr',
            { 'data-channel': c.channel, class: c.totals.errors_5xx ? 'e5' : '' },
            el('td', { text: c.channel }),
            el('td', { text: String(c.totals.requests) }),
            el('td', { text: String(c.totals.errors_4xx) }),
            el('td', { text: String(c.totals.errors_5xx) }),
            el('td', { text: c.totals.p95_ms === null ? '' : String(c.totals.p95_ms) }),
            el('td', {}, sparkline(c.series.rate.map((r) => Math.round(r * 60)), 'per minute')),
            el('td', {}, sparkline(c.series.errors_5xx, '5xx', 'err')),
          ),
        ),
      )
    : '';
  const resources = el(
    'table',
    { class: 'list', id: 'resource-counts' },
    el('tr', {}, el('th', { text: 'Resource' }), el('th', { text: 'Entries' }), el('th', { text: 'Description' })),
    catalogue.sections.map((x) => el('tr', { 'data-section': x.name }, el('td', {}, link(`#/r/${encodeURIComponent(x.name)}`, x.title ?? x.name), ' ', el('code', { class: 'key', text: x.name })), el('td', { text: String(x.count ?? '') }), el('td', {}, x.description ? prose(x.description) : ''))),
  );
  show(
    seq,
    h1('Overview'),
    banner,
    el('h2', { text: 'Needs attention' }),
    attention.length ? el('ul', { class: 'attention', id: 'attention' }, attention) : el('p', { class: 'help', id: 'attention', text: 'Nothing: no channel answered 5xx in the last 15 minutes, every service serves, every connector is up, no dead letters, no failed jobs.' }),
    el('h2', { text: 'Health' }),
    health,
    traffic ? el('h2', { text: 'Channels, last 15 minutes' }) : '',
    traffic && !channels.length ? el('p', { class: 'help', text: 'No requests in the last 15 minutes.' }) : trafficTable,
    el('h2', { text: 'Resources' }),
    resources,
  );
}

const sectionOf = (name) => catalogue.sections.find((s) => s.name === name);
/**
 * The columns of a section's list: the fields its schema marks `x-svc-list` (listColumn in the
 * plugin SDK), in their order; else its first few scalar fields. Each as `{ key, title, fallback }`:
 * `fallback` is the field's default, shown for an entry that leaves the field out (a job without
 * `enabled` is enabled, not blank).
 */
function columnsOf(section) {
  const items = section.schema?.items ?? section.schema ?? {};
  const props = {};
  for (const v of [items, ...(items.oneOf ?? items.anyOf ?? [])]) for (const [k, sch] of Object.entries(v.properties ?? {})) props[k] ??= sch;
  const marked = Object.entries(props)
    .filter(([, sch]) => typeof sch['x-svc-list'] === 'number')
    .sort(([, a], [, b]) => a['x-svc-list'] - b['x-svc-list']);
  const chosen = marked.length
    ? marked
    : Object.entries(props)
        .filter(([k, sch]) => k !== 'name' && ['string', 'integer', 'boolean', 'number'].includes(sch.type) && !/pass|secret|key/i.test(k))
        .slice(0, 4);
  return chosen.map(([key, sch]) => ({ key, title: sch.title ?? key, fallback: sch.default }));
}

/** A list row's cell: the admin API lists each entry as `{ name, source, entry }`, its fields under `entry`. */
function cellOf(item, column, fallback) {
  const value = item.entry?.[column] ?? fallback;
  if (value === undefined || value === null) return '';
  // A list of names or patterns (a group's members, an endpoint's topics) reads as one.
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Rows per page of a list. */
const PAGE_SIZE = 50;

/**
 * A section's list: its columns, where each entry comes from (the config file, or an edit made
 * here), a count, sorting by any column (click its header), pages of PAGE_SIZE, and search in
 * one field or in all the columns shown.
 */
async function listPage(name) {
  const seq = routeSeq;
  const section = sectionOf(name);
  if (!section) throw new Error(`no such resource: ${name}`);
  const entries = await api.list(name);
  const cols = columnsOf(section);
  const all = [{ key: 'name', title: 'Name' }, ...cols, { key: 'source', title: 'From' }];
  const shownValue = (e, key) => (key === 'name' ? e.name : key === 'source' ? SOURCE_TEXT[e.source] ?? e.source : cellOf(e, key, cols.find((c) => c.key === key)?.fallback));
  const search = el('input', { type: 'search', placeholder: 'Search', id: 'search' });
  const field = el('select', { id: 'search-field', 'aria-label': 'Search in' }, el('option', { value: '', text: 'in all columns' }), all.map((c) => el('option', { value: c.key, text: `in ${c.title}` })));
  const count = el('span', { class: 'help', id: 'count' });
  const pager = el('div', { class: 'toolbar', id: 'pager' });
  const body = el('tbody');
  const head = el('tr');
  const actions = name === 'channel_rest' && ops.has('cache.purge');
  let sortKey = 'name';
  let descending = false;
  let page = 0;
  const render = () => {
    const q = search.value.trim().toLowerCase();
    const keys = field.value ? [field.value] : all.map((c) => c.key);
    const found = entries.filter((e) => !q || keys.some((k) => shownValue(e, k).toLowerCase().includes(q)));
    found.sort((a, b) => shownValue(a, sortKey).localeCompare(shownValue(b, sortKey), undefined, { numeric: true }) * (descending ? -1 : 1));
    const pages = Math.max(1, Math.ceil(found.length / PAGE_SIZE));
    page = Math.min(page, pages - 1);
    const shown = found.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE);
    count.textContent = found.length === entries.length ? `${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}` : `${found.length} of ${entries.length} entries match`;
    head.replaceChildren(
      ...all.map((c) => {
        const th = el('th', { 'data-column': c.key, class: 'sortable', text: c.title + (c.key === sortKey ? (descending ? ' ▼' : ' ▲') : ''), 'aria-sort': c.key === sortKey ? (descending ? 'descending' : 'ascending') : 'none' });
        th.addEventListener('click', () => {
          descending = c.key === sortKey ? !descending : false;
          sortKey = c.key;
          render();
        });
        return th;
      }),
      actions ? el('th') : '',
    );
    body.replaceChildren(
      ...shown.map((e) =>
        el(
          'tr',
          { 'data-name': e.name },
          el('td', {}, link(`#/r/${encodeURIComponent(name)}/${encodeURIComponent(e.name)}`, e.name)),
          cols.map((c) => el('td', { 'data-column': c.key, text: cellOf(e, c.key, c.fallback) })),
          el('td', { 'data-column': 'source', text: shownValue(e, 'source') }),
          actions ? el('td', {}, e.entry?.response_cache ? purgeButton(e.name) : '') : '',
        ),
      ),
    );
    const go = (to, label, id) => {
      const b = el('button', { type: 'button', class: 'link', id, text: label, disabled: to < 0 || to >= pages });
      b.addEventListener('click', () => {
        page = to;
        render();
      });
      return b;
    };
    pager.replaceChildren(...(pages > 1 ? [go(page - 1, '← Previous', 'prev'), el('span', { class: 'help', id: 'page', text: `page ${page + 1} of ${pages}` }), go(page + 1, 'Next →', 'next')] : []));
  };
  const again = () => {
    page = 0;
    render();
  };
  search.addEventListener('input', again);
  field.addEventListener('change', again);
  render();
  show(
    seq,
    el('h1', {}, section.title ?? name, ' ', el('code', { class: 'key', text: name })),
    section.description ? el('p', { class: 'help' }, prose(section.description)) : '',
    el('div', { class: 'toolbar' }, search, field, count, canChange() ? link(`#/r/${encodeURIComponent(name)}/+new`, 'New', { class: 'button', id: 'new' }) : ''),
    el('table', { class: 'list', id: 'entries' }, el('thead', {}, head), body),
    pager,
  );
}

/** A channel with response_cache: its stored answers dropped on every node (cache.purge). */
function purgeButton(channel) {
  const b = el('button', { type: 'button', text: 'Purge cache', 'data-action': 'purge', 'data-channel': channel });
  b.addEventListener('click', async () => {
    try {
      const { purged } = await api.op('cache.purge', { channel });
      flash(`channel '${channel}': ${purged} stored answer(s) purged`);
    } catch (err) {
      failed(err);
    }
  });
  return b;
}

/** Where a resource comes from, as the list's "From" column says it. */
const SOURCE_TEXT = { admin: 'admin edit', file: 'config file', tenant_config: "tenant's config" };

async function entryPage(sectionName, entryName) {
  const seq = routeSeq;
  const section = sectionOf(sectionName);
  const creating = entryName === '+new';
  const view = creating ? undefined : await api.view(sectionName, entryName);
  const value = view?.entry;
  const schema = section.schema?.items ?? section.schema;
  const form = field(schema, [], value, { required: true, secretsWriteOnly: true, refs: await referencedNames(schema), secretsSet: view?.secretsSet ?? [] });
  const issues = el('div', { class: 'issues' });
  const save = el('button', { type: 'submit', text: creating ? 'Create' : 'Save' });
  // An entry of a tenant's own config changes there (its file), not here: the API refuses it.
  const writtenIn = view?.source === 'tenant_config' ? view.origin : undefined;
  const readOnly = writtenIn ? `Read only: written in ${writtenIn}; change it there.` : canChange() ? undefined : 'Read only: your role (viewer) changes nothing.';
  const formNode = el('form', { class: 'entry' }, form.node, issues, el('div', { class: 'toolbar' }, readOnly ? el('p', { class: 'help', id: 'read-only', text: readOnly }) : save));
  formNode.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const entry = form.read();
      const saved = creating ? await api.create(sectionName, entry) : await api.update(sectionName, entryName, entry);
      showIssues(formNode, [], issues);
      navigate(`#/r/${encodeURIComponent(sectionName)}/${encodeURIComponent(saved?.name ?? entry.name)}`, `${sectionName} '${saved?.name ?? entry.name}' saved and applied`);
    } catch (err) {
      if (err.path) return showIssues(formNode, [{ path: err.path, message: err.message }], issues);
      if (err instanceof ApiError && err.issues.length) showIssues(formNode, err.issues, issues);
      failed(err);
    }
  });
  const del = creating || readOnly
    ? ''
    : el('button', { type: 'button', class: 'danger', text: 'Delete', id: 'delete' });
  if (del)
    del.addEventListener('click', async () => {
      if (!confirm(`Delete ${sectionName} '${entryName}'?`)) return;
      try {
        await api.remove(sectionName, entryName);
        navigate(`#/r/${encodeURIComponent(sectionName)}`, `${sectionName} '${entryName}' deleted`);
      } catch (err) {
        failed(err);
      }
    });
  show(seq, el('p', {}, link(`#/r/${encodeURIComponent(sectionName)}`, `← ${section.title ?? sectionName}`)), h1(creating ? `New in ${section.title ?? sectionName}` : entryName), formNode, del);
}

/** The names a form's reference fields may take (`scopedRef.to` in its schema), by what they name: sections the caller sees, and `services`. */
async function referencedNames(schema) {
  const targets = new Set();
  const walk = (s) => {
    if (!s || typeof s !== 'object') return;
    for (const t of s.scopedRef?.to ?? []) targets.add(t);
    for (const v of Object.values(s.properties ?? {})) walk(v);
    for (const v of [...(s.oneOf ?? []), ...(s.anyOf ?? []), s.items]) walk(v);
  };
  walk(schema);
  const refs = new Map();
  await Promise.all(
    [...targets].map(async (t) => {
      if (t === 'services') {
        if (ops.has('services.list')) refs.set(t, (await api.op('services.list').catch(() => [])).filter((x) => x.deployed).map((x) => x.name));
      } else if (sectionOf(t)) refs.set(t, (await api.list(t).catch(() => [])).map((e) => e.name));
    }),
  );
  return refs;
}

/** A form for one operation's arguments, and where its result goes. */
function opForm(op, onResult, label = 'Run') {
  const form = field(op.args ?? { type: 'object', properties: {} }, [], undefined, { required: true });
  const issues = el('div', { class: 'issues' });
  const node = el('form', { class: 'op', 'data-op': op.op }, form.node, issues, el('button', { type: 'submit', text: label }));
  node.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      const result = await api.op(op.op, form.read());
      showIssues(node, [], issues);
      onResult(result);
    } catch (err) {
      if (err instanceof ApiError && err.issues.length) showIssues(node, err.issues, issues);
      failed(err);
    }
  });
  return node;
}

/**
 * An op's answer as people read it: a list of records as a table, a record as field and value,
 * anything else (and what a table cannot hold) as JSON.
 */
function resultView(result) {
  const scalar = (v) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
  const cell = (v) => el('td', { text: v === undefined ? '' : scalar(v) ? String(v) : JSON.stringify(v) });
  if (Array.isArray(result) && result.length && result.every((r) => r && typeof r === 'object' && !Array.isArray(r))) {
    const keys = [...new Set(result.flatMap((r) => Object.keys(r)))];
    return el('table', { class: 'list result' }, el('tr', {}, keys.map((k) => el('th', { text: k }))), result.map((r) => el('tr', {}, keys.map((k) => cell(r[k])))));
  }
  if (result && typeof result === 'object' && !Array.isArray(result)) return el('table', { class: 'list result' }, Object.entries(result).map(([k, v]) => el('tr', {}, el('th', { text: k }), cell(v))));
  if (Array.isArray(result) && !result.length) return el('p', { class: 'help', text: 'Nothing.' });
  return pre(result);
}

/**
 * Ops whose arguments are hashes made on the operator's machine (the CLI's set-password and
 * create-key hash locally, so no secret crosses the wire): no form of raw hashes here; the page
 * says where to do it instead.
 */
const takesHashes = (op) => Object.keys(op.args?.properties ?? {}).some((k) => /hash|digest/i.test(k));

function opsPage() {
  const seq = routeSeq;
  const out = el('div', { id: 'op-result' });
  const runnable = [...ops.values()].filter((op) => !takesHashes(op));
  const elsewhere = [...ops.values()].filter(takesHashes);
  show(
    seq,
    h1('Operations'),
    el('p', { class: 'help', text: 'What the enabled plugins let operators do on the running server.' }),
    ...runnable.map((op) => el('details', { class: 'op' }, el('summary', {}, el('code', { text: op.op }), op.description ? [' — ', ...prose(op.description)] : ''), opForm(op, (r) => out.replaceChildren(resultView(r))))),
    out,
    elsewhere.length
      ? el(
          'div',
          { class: 'help', id: 'ops-elsewhere' },
          el('h2', { text: 'Done elsewhere' }),
          el('p', { text: 'These take a hash made on your machine, so that no password crosses the network: set a security definition\'s password in its form (Resources), accounts and keys on the Accounts page, or from the command line:' }),
          el('ul', {}, elsewhere.map((op) => el('li', {}, el('code', { text: op.op }), ` — svc ${op.op.replace('.', ' ')}`))),
        )
      : '',
  );
}

async function trafficPage() {
  const seq = routeSeq;
  const rows = el('tbody');
  const charts = el('div', { class: 'charts' });
  let lastSeq = 0;
  const recent = [];
  const row = (r) =>
    el(
      'tr',
      { class: r.status >= 500 ? 'e5' : r.status >= 400 ? 'e4' : '' },
      el('td', { text: new Date(r.at).toLocaleTimeString() }),
      el('td', {}, el('code', { text: r.cid })),
      el('td', { text: r.channel ?? '' }),
      el('td', { text: `${r.method} ${r.path}` }),
      el('td', { text: String(r.status) }),
      el('td', { text: r.ms.toFixed(1) }),
    );
  const chart = (c) =>
    el(
      'div',
      { class: 'chart' },
      el('h3', { text: c.channel }),
      sparkline(c.series.rate, 'requests/s'),
      sparkline(c.series.errors_4xx.map((e, i) => e + c.series.errors_5xx[i]), 'errors per step', 'err'),
      el('div', { class: 'help', text: `${c.totals.requests} requests, ${c.totals.errors_4xx} 4xx, ${c.totals.errors_5xx} 5xx, mean ${c.totals.mean_ms ?? '-'} ms` }),
    );
  const refresh = async () => {
    const [fresh, stats] = await Promise.all([api.op('traffic.recent', { after_seq: lastSeq, limit: 200 }), api.op('traffic.stats', { seconds: 300, step: 10 })]);
    lastSeq = Math.max(lastSeq, fresh.last_seq ?? 0);
    recent.unshift(...fresh.requests);
    recent.length = Math.min(recent.length, 200);
    rows.replaceChildren(...recent.map(row));
    charts.replaceChildren(...stats.channels.map(chart));
  };
  show(seq, 
    h1('Traffic'),
    el('h2', { text: 'Per channel, last 5 minutes' }),
    charts,
    el('h2', { text: 'Recent requests' }),
    el('table', { class: 'list', id: 'recent' }, el('thead', {}, el('tr', {}, ['time', 'CID', 'channel', 'request', 'status', 'ms'].map((t) => el('th', { text: t })))), rows),
  );
  await refresh();
  pollTimer = setInterval(() => refresh().catch(failed), 2000);
}

async function servicesPage(name) {
  const seq = routeSeq;
  const ui = { ops, me, canChange: canChange(), navigate, flash, failed };
  show(seq, ...(await (name ? servicePage(name, ui) : servicesList(ui))));
}

async function pubsubPage(id) {
  const seq = routeSeq;
  if (id) {
    const { subscription, messages } = await api.op('pubsub.messages', { id, limit: 100 });
    return show(seq, 
      el('p', {}, link('#/pubsub', '← Pub/sub')),
      h1(`${subscription.endpoint} ← ${subscription.topic}`),
      el('p', { class: 'help', text: `${subscription.queue_depth} queued; browsing does not consume them.` }),
      el('table', { class: 'list', id: 'messages' }, el('tr', {}, ['msg_id', 'data', 'mime type', 'priority', 'published'].map((t) => el('th', { text: t }))), messages.map((m) => el('tr', {}, el('td', {}, el('code', { text: m.msg_id })), el('td', { text: m.data_preview }), el('td', { text: m.mime_type ?? '' }), el('td', { text: String(m.priority) }), el('td', { text: m.pub_time_iso ?? '' })))),
    );
  }
  const subs = await api.op('pubsub.subscriptions', {});
  const subscribe = ops.has('pubsub.subscribe') ? opForm(ops.get('pubsub.subscribe'), () => route(), 'Subscribe') : '';
  show(seq, 
    h1('Pub/sub subscriptions'),
    el('table', { class: 'list', id: 'subscriptions' }, el('tr', {}, ['endpoint', 'topic', 'sub_key', 'queued'].map((t) => el('th', { text: t }))), subs.map((s) => el('tr', {}, el('td', { text: s.endpoint }), el('td', { text: s.topic }), el('td', {}, el('code', { text: s.sub_key })), el('td', {}, link(`#/pubsub/${encodeURIComponent(s.id)}`, String(s.queue_depth), { class: 'browse' }))))),
    el('h2', { text: 'Subscribe an endpoint' }),
    subscribe,
  );
}

async function queuePage() {
  const seq = routeSeq;
  const events = await api.op('queue.list', { limit: 200 });
  const act = async (verb, id) => {
    try {
      await api.op(`queue.${verb}`, { id });
      flash(`event ${id}: ${verb} done`);
      await queuePage();
    } catch (err) {
      failed(err);
    }
  };
  const button = (verb, id) => {
    const b = el('button', { type: 'button', text: verb, 'data-action': verb, 'data-id': id });
    b.addEventListener('click', () => act(verb, id));
    return b;
  };
  const row = (e) =>
    el(
      'tr',
      { class: e.state },
      el('td', { text: String(e.id) }),
      el('td', { text: e.channel ?? '(background)' }),
      el('td', { text: e.state }),
      el('td', { text: String(e.attempts) }),
      el('td', { text: e.lastError ? errorText(e.lastError) : '' }),
      el('td', {}, e.state === 'running' || !ops.has('queue.replay') ? '' : [button('replay', e.id), ' ', button('delete', e.id)]),
    );
  show(seq, 
    h1('Queued events'),
    el('table', { class: 'list', id: 'events' }, el('tr', {}, ['id', 'channel', 'state', 'attempts', 'last error', ''].map((t) => el('th', { text: t }))), events.map(row)),
  );
}

/** Run now, pause or resume a job; then the page is drawn again. */
function jobActions(job, redraw) {
  const act = async (verb) => {
    try {
      const r = await api.op(`job.${verb}`, { name: job.name });
      flash(verb === 'run' ? `${job.name}: run ${r.state} (CID ${r.cid ?? '-'})` : `${job.name}: ${verb === 'pause' ? 'paused' : 'resumed'}`);
      await redraw();
    } catch (err) {
      failed(err);
    }
  };
  const button = (verb, text) => {
    const b = el('button', { type: 'button', text, 'data-action': verb, 'data-job': job.name });
    b.addEventListener('click', () => act(verb));
    return b;
  };
  return [button('run', 'Run now'), ' ', job.paused ? button('resume', 'Resume') : button('pause', 'Pause')];
}

const jobState = (j) => (!j.enabled ? 'disabled' : j.paused ? 'paused' : 'active');
const when = (iso) => (iso ? iso.replace('T', ' ').replace(/\.000Z$/, 'Z') : '–');

async function jobsPage() {
  const seq = routeSeq;
  const jobs = await api.op('job.list', {});
  const row = (j) =>
    el(
      'tr',
      { class: jobState(j), 'data-name': j.name },
      el('td', {}, link(`#/jobs/${encodeURIComponent(j.name)}`, j.name)),
      el('td', { text: j.service }),
      el('td', { text: `${j.schedule} (${j.timezone})` }),
      el('td', { 'data-column': 'state', text: jobState(j) }),
      el('td', { 'data-column': 'next', text: when(j.nextRuns[0]) }),
      el('td', { 'data-column': 'last', class: j.lastRun?.state ?? '', text: j.lastRun ? `${j.lastRun.state} ${when(j.lastRun.tick)}` : 'never ran' }),
      el('td', {}, j.enabled && ops.has('job.run') ? jobActions(j, jobsPage) : ''),
    );
  show(
    seq,
    h1('Jobs'),
    el('p', { class: 'help', text: 'Scheduled jobs (scheduler_job). Each tick runs once across the cluster, through the Use queue.' }),
    el('table', { class: 'list', id: 'jobs' }, el('tr', {}, ['job', 'service', 'schedule', 'state', 'next run', 'last run', ''].map((t) => el('th', { text: t }))), jobs.map(row)),
  );
}

async function jobPage(name) {
  const seq = routeSeq;
  const job = await api.op('job.show', { name, limit: 100 });
  const row = (r) =>
    el(
      'tr',
      { class: r.state },
      el('td', { text: when(r.tick) }),
      el('td', { text: r.cause }),
      el('td', { 'data-column': 'state', text: r.state + (r.missed ? ` (${r.missed} missed)` : '') }),
      el('td', { text: `${r.lateMs}` }),
      el('td', { text: r.durationMs === null ? '' : `${r.durationMs}` }),
      el('td', { text: String(r.attempts) }),
      el('td', {}, r.cid ? el('code', { text: r.cid }) : ''),
      el('td', { text: r.error ?? '' }),
    );
  show(
    seq,
    h1(`Job ${job.name}`),
    el('p', { text: `${job.service}: ${job.schedule} (${job.timezone}), ${jobState(job)}; overlap ${job.overlap}, missed ${job.missed}` }),
    el('p', {}, job.enabled && ops.has('job.run') ? jobActions(job, () => jobPage(name)) : ''),
    el('h2', { text: 'Next runs' }),
    el('ul', { id: 'next-runs' }, job.nextRuns.map((t) => el('li', { text: when(t) }))),
    el('h2', { text: 'History' }),
    el('table', { class: 'list', id: 'history' }, el('tr', {}, ['tick', 'cause', 'outcome', 'late ms', 'took ms', 'attempts', 'CID', 'error'].map((t) => el('th', { text: t }))), job.history.map(row)),
  );
}

async function nodesPage() {
  const seq = routeSeq;
  const { nodes } = await api.op('cluster.nodes', {});
  const row = (n) =>
    el(
      'tr',
      { class: n.state },
      el('td', { text: n.name + (n.self ? ' (this one)' : '') }),
      el('td', { text: n.state }),
      el('td', { text: `${n.host} pid ${n.pid}` }),
      el('td', { text: `svc ${n.version}, Node ${n.runtime}` }),
      el('td', { text: n.started_at }),
      el('td', { text: n.heard_at }),
      el('td', {}, el('code', { text: n.id })),
    );
  show(seq,
    h1('Nodes'),
    el('p', { class: 'help', text: 'Every node on this data store: up while its heartbeat is on time, down when it is late (the node died), stopped after a clean shutdown.' }),
    el('table', { class: 'list', id: 'nodes' }, el('tr', {}, ['name', 'state', 'where', 'runs', 'started', 'last heard', 'id'].map((t) => el('th', { text: t }))), nodes.map(row)),
  );
}

async function auditPage() {
  const seq = routeSeq;
  const rows = await api.audit();
  // What an edit changed, field by field (secrets only as "changed"); a failed login's address; an op's arguments.
  const what = (d) => {
    if (!d) return '';
    const parts = [];
    for (const [field, { before, after }] of Object.entries(d.changed ?? {})) parts.push(`${field}: ${before === undefined ? '(none)' : JSON.stringify(before)} → ${after === undefined ? '(none)' : JSON.stringify(after)}`);
    for (const field of d.secretsChanged ?? []) parts.push(`${field}: changed (write-only)`);
    if (d.address) parts.push(`from ${d.address}`);
    if (d.args) parts.push(JSON.stringify(d.args));
    return parts.join('\n');
  };
  const row = (r) =>
    el(
      'tr',
      {},
      el('td', { text: r.at }),
      el('td', { text: r.actor ?? '' }),
      el('td', { text: r.tenant ?? '' }),
      el('td', { text: r.action }),
      el('td', { text: [r.section, r.name].filter(Boolean).join(' / ') }),
      el('td', { class: 'change', text: what(r.detail) }),
    );
  show(seq, h1('Audit log'), el('table', { class: 'list', id: 'audit' }, el('tr', {}, ['when', 'who', 'tenant', 'action', 'resource', 'what changed'].map((t) => el('th', { text: t }))), rows.map(row)));
}

async function usagePage() {
  const seq = routeSeq;
  show(seq, ...(await usageView(me)));
}

async function accountsPage() {
  const seq = routeSeq;
  show(seq, ...(await accountsView(me, { redraw: accountsPage, flash, failed })));
}

function downloadsPage() {
  const seq = routeSeq;
  const demo = el('button', { type: 'button', id: 'demo', text: 'Import demo credentials and topics' });
  const out = el('div');
  demo.addEventListener('click', async () => {
    try {
      out.replaceChildren(pre(await api.op('pubsub.demo', {})));
    } catch (err) {
      failed(err);
    }
  });
  show(seq, 
    h1('Downloads'),
    el(
      'ul',
      {},
      el('li', {}, link('/admin/api/spec/openapi.json', 'Interface specification (OpenAPI 3.1: channels and pub/sub)', { download: 'svc-openapi.json', id: 'spec' })),
      ops.has('openapi.channels') ? el('li', {}, link('/admin/api/spec/channels.json', 'Channels only (OpenAPI 3.1, from the config and the services\' input models)', { download: 'svc-channels-openapi.json', id: 'channels-spec' })) : '',
      el('li', {}, link('/admin/api/openapi.json', 'Admin API (OpenAPI 3.1)', { download: 'svc-admin-openapi.json' })),
    ),
    ops.has('pubsub.demo') ? el('div', {}, el('h2', { text: 'Demo' }), el('p', { class: 'help', text: 'Creates demo credentials and a few topics; they do not survive a restart.' }), demo, out) : '',
  );
}

start();
