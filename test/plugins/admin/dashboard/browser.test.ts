import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { sendControl } from '../../../../kernel/control.ts';
import { closePage, docShot, openPage, step, submitLogin } from '../../../helpers/browser.ts';
import { openApiProblems } from '../../../helpers/openapi.ts';
import { ADMIN_PASSWORD, AdminClient, resourcePath, startAdmin, type AdminKernel } from '../api/support.ts';

/**
 * The Dashboard in headless Chromium against a server on real sockets: the operator's path of
 * issue 13, clicked through the generated forms. `SVC_SCREENSHOTS=1` also writes each main page
 * to docs/img/ (how the README's pictures are made).
 */

const CONFIG = `
security:
  - { name: app, type: basic_auth, username: orders-app, password: app-password }
pubsub_topic:
  - { name: /orders/new }
pubsub_endpoint:
  - { name: orders.app, security: app, pub: ['/orders/*'], sub: ['/orders/*'] }
channel_rest:
  - { name: hello, url_path: /hello, service: echo, security: none }
  - name: fail
    url_path: /fail
    service: boom
    method: POST
    security: none
    use_queue: true
    delivery: { max_attempts: 1 }
scheduler_job:
  - { name: nightly-sync, service: echo, cron: '30 2 * * *', timezone: Europe/Berlin }
secrets:
  - { name: webhook-key, services: [echo] }
`;
const BOOM = `import { service } from 'svc/sdk';\nexport default service({ handle() { throw new Error('the upstream is down'); } });\n`;
const LOOKUP = `import { service, sql } from 'svc/sdk';\nexport default service({ async handle() { const { rows } = await sql('crm_db').query('SELECT $1::int + 1 AS n', [41]); return rows[0]; } });\n`;

let k: AdminKernel;
let page: Page;
let api: AdminClient;

beforeAll(async () => {
  k = await startAdmin({ config: CONFIG, services: { 'boom.ts': BOOM, 'lookup.ts': LOOKUP } });
  api = new AdminClient(k.admin);
  expect((await api.login()).status).toBe(200);
  page = await openPage();
}, 60_000);
afterAll(async () => {
  await closePage(page);
  await k?.close();
});

const channelUrl = (path: string) => `${k.url}${path}`;
async function call(path: string, user?: string, password?: string, init: RequestInit = {}): Promise<number> {
  const headers: Record<string, string> = { ...(init.headers as Record<string, string>) };
  if (user) headers.authorization = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
  const res = await fetch(channelUrl(path), { ...init, headers });
  await res.text();
  return res.status;
}
const shot = (name: string) => docShot(page, name);
/** Opens a page; with `heading`, waits until that page is drawn (the one before may share field ids). */
async function go(hash: string, heading?: string): Promise<void> {
  await page.goto(`${k.admin}/admin/${hash}`);
  if (heading) await page.locator('h1', { hasText: heading }).waitFor();
}
/**
 * Saves the form and waits for the Dashboard to confirm it was applied. The page records every
 * message its flash box shows: a success message clears itself after 4 s, and on a loaded CI
 * machine polling for it from here once missed it whole.
 */
async function save(label: 'Create' | 'Save'): Promise<void> {
  await page.locator('#flash').evaluate((n) => {
    n.textContent = '';
    n.setAttribute('class', 'flash');
    const seen: Array<{ kind: string; text: string }> = [];
    const w = window as unknown as { svcFlashes: typeof seen; svcFlashObserver?: MutationObserver };
    // One observer per page: the previous save's stops here, or it would keep recording into its own list.
    w.svcFlashObserver?.disconnect();
    w.svcFlashes = seen;
    w.svcFlashObserver = new MutationObserver(() => {
      if (n.textContent) seen.push({ kind: n.className, text: n.textContent });
    });
    w.svcFlashObserver.observe(n, { childList: true, characterData: true, subtree: true, attributes: true });
  });
  await page.getByRole('button', { name: label, exact: true }).click();
  await page.waitForFunction(() => (window as unknown as { svcFlashes: unknown[] }).svcFlashes.length > 0);
  const first = await page.evaluate(() => (window as unknown as { svcFlashes: Array<{ kind: string; text: string }> }).svcFlashes[0]!);
  if (first.kind.includes('error')) throw new Error(`the Dashboard said: ${first.text} / ${await page.locator('.issues').allTextContents()}`);
  expect(first.kind).toContain('ok');
  expect(first.text).toContain('saved and applied');
}

/** Signs the page in through the login form unless it already is: each test but the first starts signed in, whatever ran before it. */
async function signIn(): Promise<void> {
  await go('');
  const signedIn = page.locator('nav').getByRole('link', { name: 'REST channels' });
  const form = page.locator('#password');
  await Promise.race([signedIn.waitFor(), form.waitFor()]);
  if (await signedIn.isVisible()) return;
  await submitLogin(page, ADMIN_PASSWORD);
  await signedIn.waitFor();
}

/** Creates a resource through the admin API, as another operator or a script would; a test makes what it reads. */
async function create(section: string, entry: Record<string, unknown>): Promise<void> {
  const r = await api.post(resourcePath(section), entry);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
}

describe('the Dashboard in Chromium', () => {
  beforeEach(async (ctx) => {
    if (ctx.task.name !== 'logs in') await signIn();
  });

  it('logs in', async () => {
    await step(page, 'login', async () => {
      await page.context().clearCookies();
      await go('');
      await submitLogin(page, 'wrong password');
      await page.locator('#flash.error').waitFor();
      await shot('login');
      await submitLogin(page, ADMIN_PASSWORD);
      await page.locator('nav').getByRole('link', { name: 'REST channels' }).waitFor();
      await shot('overview');
    });
  });

  it('creates a Basic Auth definition and a channel bound to a service with it; the channel answers 200', async () => {
    await step(page, 'create-definition', async () => {
      await go('#/r/security/+new', 'New in Security definitions');
      await page.locator('#f-type').selectOption('basic_auth');
      await page.locator('#f-name').fill('crm');
      await page.locator('#f-username').fill('crm-user');
      await page.locator('#f-password').fill('first-password');
      await shot('security-new');
      await save('Create');
    });
    await step(page, 'create-channel', async () => {
      await go('#/r/channel_rest/+new', 'New in REST channels');
      await page.locator('#f-name').fill('crm.echo');
      await page.locator('#f-url_path').fill('/crm');
      // References offer what exists, and a name that exists nowhere is flagged before saving.
      const offered = (id: string) => page.locator(`#${id}-choices option`).evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
      expect(await offered('f-service')).toEqual(expect.arrayContaining(['echo', 'boom', 'lookup']));
      expect(await offered('f-security')).toEqual(expect.arrayContaining(['none', 'app', 'crm']));
      await page.locator('#f-service').fill('helo');
      expect(await page.locator('.field-warning[data-path="service"]').textContent()).toBe("No deployed service is named 'helo': calls answer 500 until one is deployed.");
      await page.locator('#f-service').fill('echo');
      expect(await page.locator('.field-warning[data-path="service"]').textContent()).toBe('');
      await page.locator('#f-security').fill('crm');
      expect(await page.locator('.field-warning[data-path="security"]').textContent()).toBe('');
      await save('Create');
    });
    expect(await call('/crm')).toBe(401);
    expect(await call('/crm', 'crm-user', 'first-password')).toBe(200);
    // A write-only field that holds a value says so, without its value.
    await go('#/r/security/crm', 'crm');
    expect(await page.locator('label[for="f-password"] .badge').textContent()).toBe(' set');
    expect(await page.locator('#f-password').getAttribute('placeholder')).toBe('(set: leave empty to keep it)');
    expect(await page.locator('#f-password').inputValue()).toBe('');
  });

  it('marks a named secret set with `svc secret set` (the store, not the file) as set, without its value', async () => {
    await go('#/r/secrets/webhook-key', 'webhook-key');
    expect(await page.locator('label[for="f-value"] .badge').count()).toBe(0);
    // What `svc secret set webhook-key` sends the running server.
    expect(await sendControl(join(k.dir, 'data', 'control.sock'), 'secrets.set', { name: 'webhook-key', value: 'from-the-cli', configValue: null })).toMatchObject({ ok: true });
    // The same hash again would not render the page anew: load it afresh, as an operator's reload does.
    await page.reload();
    await page.locator('h1', { hasText: 'webhook-key' }).waitFor();
    expect(await page.locator('label[for="f-value"] .badge').textContent()).toBe(' set');
    expect(await page.locator('#f-value').inputValue()).toBe('');
    expect(await page.content()).not.toContain('from-the-cli');
  });

  it('adds a PostgreSQL connection from its generated form; a service queries through it and /ready lists it', async () => {
    await step(page, 'create-sql-connection', async () => {
      await go('#/r/sql_connection/+new', 'New in SQL connections');
      await page.locator('#f-name').fill('crm_db');
      await page.locator('#f-engine').selectOption('postgresql');
      await page.locator('#f-url').fill('postgres://postgres@127.0.0.1:5432/test');
      await page.locator('#f-pool_size').fill('2');
      await shot('sql-connection-new');
      await save('Create');
    });
    await step(page, 'create-lookup-channel', async () => {
      await go('#/r/channel_rest/+new', 'New in REST channels');
      await page.locator('#f-name').fill('lookup');
      await page.locator('#f-url_path').fill('/lookup');
      await page.locator('#f-service').fill('lookup');
      await page.locator('#f-security').fill('none');
      await save('Create');
    });
    const res = await fetch(channelUrl('/lookup'));
    expect(await res.json()).toEqual({ n: 42 });
    const ready = (await (await fetch(`${k.admin}/ready`)).json()) as { connections: unknown[] };
    expect(ready.connections).toContainEqual(expect.objectContaining({ kind: 'sql', name: 'crm_db', state: 'up' }));
  });

  it('shows the server\'s validation errors next to the field', async () => {
    await step(page, 'inline-errors', async () => {
      await go('#/r/channel_rest/+new', 'New in REST channels');
      // Labels for people with the YAML key beside them; help with its `code` as code, no backticks.
      expect(await page.locator('label[for="f-url_path"]').textContent()).toBe('URL path url_path *');
      const ttlHelp = page.locator('.help', { hasText: 'How long an answer is served from the cache' }).first();
      expect(await ttlHelp.locator('code').allTextContents()).toEqual(['30s', '5m', '1h']);
      expect(await ttlHelp.textContent()).not.toContain('`');
      // Settings shown only where they apply: the queue's with use_queue, a format's with its data_format.
      const delivery = page.locator('fieldset[data-path="delivery"]');
      const csv = page.locator('[data-path="csv"]').first();
      expect(await delivery.isVisible()).toBe(false);
      expect(await csv.isVisible()).toBe(false);
      await page.locator('#f-use_queue').check();
      expect(await delivery.isVisible()).toBe(true);
      await page.locator('#f-use_queue').uncheck();
      expect(await delivery.isVisible()).toBe(false);
      await page.locator('#f-data_format').fill('csv');
      expect(await csv.isVisible()).toBe(true);
      await page.locator('#f-data_format').fill('');
      await page.locator('#f-name').fill('broken');
      await page.locator('#f-url_path').fill('/broken');
      await page.locator('#f-service').fill('echo');
      await page.locator('#f-security').fill('no-such-definition');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      const error = page.locator('.field-error[data-path="security"]');
      await expect.poll(() => error.textContent()).toContain('no-such-definition');
      await shot('channel-invalid');
    });
  });

  it('rotates the secret: the old password is refused, the new one works', async () => {
    await create('security', { name: 'rotating', type: 'basic_auth', username: 'rot-user', password: 'first-password' });
    await create('channel_rest', { name: 'rotating.echo', url_path: '/rotating', service: 'echo', security: 'rotating' });
    expect(await call('/rotating', 'rot-user', 'first-password')).toBe(200);
    await step(page, 'rotate', async () => {
      await go('#/r/security/rotating', 'rotating');
      // A stored secret is never shown; an empty field keeps it.
      expect(await page.locator('#f-password').inputValue()).toBe('');
      await page.locator('#f-password').fill('second-password');
      await save('Save');
    });
    expect(await call('/rotating', 'rot-user', 'first-password')).toBe(401);
    expect(await call('/rotating', 'rot-user', 'second-password')).toBe(200);
  });

  it('adds a rate-limit rule to the channel and the next calls get 429', async () => {
    await create('channel_rest', { name: 'limited.echo', url_path: '/limited', service: 'echo', security: 'none' });
    await step(page, 'rate-limit', async () => {
      await go('#/r/channel_rest/limited.echo', 'limited.echo');
      await page.locator('#f-rate_limiting').fill(JSON.stringify([{ cidr_list: [], time_range: [{ is_all_day: true, rate: 1, burst: 1 }] }]));
      await save('Save');
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push(await call('/limited'));
    expect(statuses).toContain(429);
    expect(statuses[0]).toBe(200);
  });

  it('replays a dead event from the queued events page', async () => {
    expect(await call('/fail', undefined, undefined, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).toBe(200);
    await expect.poll(async () => (await api.send('POST', '/admin/api/ops/queue.list', { state: 'dead' })).body.result.length, { timeout: 10_000 }).toBe(1);
    await step(page, 'replay', async () => {
      await go('#/queue', 'Queued events');
      const row = page.locator('#events tr.dead');
      await row.waitFor();
      // The exception's kind said once, not `Error: Error: …`.
      expect(await row.locator('td').allTextContents()).toContain('Error: the upstream is down');
      await shot('queue');
      await row.getByRole('button', { name: 'replay' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'replay done' }).waitFor();
    });
    // It ran again (and failed again, as the service still throws): two attempts' errors kept.
    await expect
      .poll(async () => {
        const [dead] = (await api.send('POST', '/admin/api/ops/queue.list', { state: 'dead' })).body.result;
        return dead?.errorCount;
      }, { timeout: 10_000 })
      .toBe(2);
  });

  it('runs a job now from the jobs page, pauses it, and shows its next runs and history', async () => {
    await step(page, 'jobs', async () => {
      await go('#/jobs', 'Jobs');
      const row = () => page.locator('#jobs tr[data-name="nightly-sync"]');
      await row().locator('[data-column="state"]', { hasText: 'active' }).waitFor();
      await shot('jobs');
      await row().getByRole('button', { name: 'Run now' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'nightly-sync: run queued' }).waitFor();
      await row().getByRole('button', { name: 'Pause' }).click();
      await row().locator('[data-column="state"]', { hasText: 'paused' }).waitFor();
      expect(await row().locator('[data-column="next"]').textContent()).toBe('–');
    });
    await expect.poll(async () => (await api.send('POST', '/admin/api/ops/job.show', { name: 'nightly-sync' })).body.result.history[0]?.state, { timeout: 10_000 }).toBe('succeeded');
    await step(page, 'job history', async () => {
      await go('#/jobs/nightly-sync', 'Job nightly-sync');
      await page.locator('#history tr.succeeded').filter({ hasText: 'manual' }).waitFor();
      // Paused: no next runs; resumed, the 02:30 Berlin ticks are listed again.
      expect(await page.locator('#next-runs li').count()).toBe(0);
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.locator('#next-runs li').first().waitFor();
      expect(await page.locator('#next-runs li').first().textContent()).toMatch(/ 0[01]:30:00Z$/);
    });
  });

  it('opens on an overview that says what needs attention (a failing channel, dead letters, a refused config file with its line), health and p95 per channel', async () => {
    await create('channel_rest', { name: 'crashing', url_path: '/crashing', service: 'boom', security: 'none' });
    for (let i = 0; i < 3; i++) expect(await call('/crashing')).toBe(500);
    expect(await call('/hello')).toBe(200);
    // A save of the config file that does not validate: the running config stays, and the overview says where.
    expect(await k.writeConfig(CONFIG.replace("service: echo, cron: '30 2 * * *'", "service: echo, cron: 'every day'"))).toBe(false);
    await step(page, 'overview', async () => {
      await go('#/', 'Overview');
      const banner = page.locator('#config-refused');
      await banner.waitFor();
      expect(await banner.locator('strong').textContent()).toMatch(/^The config file was refused at \S+: the running config stays\.$/);
      // The line of the refused field in the file as written (the test kernel rewrites it, its own settings added).
      const line = readFileSync(k.configPath, 'utf8').split('\n').findIndex((l) => l.includes('every day')) + 1;
      expect(await banner.locator('li').first().textContent()).toMatch(new RegExp(`^line ${line}: scheduler_job\\[0\\]`));
      const attention = page.locator('#attention li');
      expect(await attention.filter({ hasText: 'crashing' }).textContent()).toBe('crashing answered 5xx 3 times of 3 in 15 minutes: service boom');
      expect(await attention.filter({ hasText: 'dead letter' }).textContent()).toMatch(/^fail has \d+ dead letters?$/);
      expect(await page.locator('#health .card').first().textContent()).toContain('Readyyes');
      const hello = page.locator('#channel-health tr[data-channel="hello"] td');
      expect(await hello.nth(1).textContent()).not.toBe('0');
      expect(Number(await hello.nth(4).textContent())).toBeGreaterThan(0);
      expect(await page.locator('#channel-health tr[data-channel="crashing"]').getAttribute('class')).toBe('e5');
      expect(Number(await page.locator('#resource-counts tr[data-section="channel_rest"]').locator('td').nth(1).textContent())).toBeGreaterThan(2);
      await shot('overview');
    });
    // Saved right again: the banner goes.
    expect(await k.writeConfig(CONFIG)).toBe(true);
    await page.reload();
    await page.locator('#attention').waitFor();
    expect(await page.locator('#config-refused').count()).toBe(0);
  });

  it('runs an operation from its form and shows the answer as a table; ops that take hashes point to where a password is set instead', async () => {
    await step(page, 'ops', async () => {
      await go('#/ops', 'Operations');
      expect(await page.locator('form.op[data-op="secdef.set-password"]').count()).toBe(0);
      expect(await page.locator('#ops-elsewhere li', { hasText: 'secdef.set-password' }).textContent()).toBe('secdef.set-password — svc secdef set-password');
      const job = page.locator('details.op', { has: page.locator('form.op[data-op="job.list"]') });
      await job.locator('summary').click();
      await job.getByRole('button', { name: 'Run' }).click();
      const result = page.locator('#op-result table.result');
      await result.waitFor();
      expect(await result.locator('th').first().textContent()).toBe('name');
      expect(await result.locator('td').first().textContent()).toBe('nightly-sync');
      await shot('ops');
    });
  });

  it('lists this node on the nodes page', async () => {
    await step(page, 'nodes', async () => {
      await go('#/nodes', 'Nodes');
      await page.locator('#nodes tr.up').filter({ hasText: '(this one)' }).waitFor();
    });
  });

  it('subscribes an endpoint and browses its queued messages without consuming them', async () => {
    await step(page, 'pubsub', async () => {
      await go('#/pubsub', 'Pub/sub subscriptions');
      const form = page.locator('form[data-op="pubsub.subscribe"]');
      await form.locator('#f-endpoint').fill('orders.app');
      await form.locator('#f-topic').fill('/orders/new');
      await form.getByRole('button', { name: 'Subscribe' }).click();
      await page.locator('#subscriptions').getByText('orders.app').waitFor();
    });
    const auth = 'Basic ' + Buffer.from('orders-app:app-password').toString('base64');
    const published = await fetch(channelUrl('/svc/pubsub/topic/orders/new'), { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ data: 'hello from the test' }) });
    expect(published.status).toBe(200);
    await step(page, 'pubsub-browse', async () => {
      // The engine moves a published message to its subscribers' queues in the background.
      await expect
        .poll(async () => {
          await go('#/r/pubsub_topic');
          await go('#/pubsub');
          return page.locator('#subscriptions a.browse').first().textContent();
        }, { timeout: 10_000 })
        .toBe('1');
      await page.locator('#subscriptions a.browse').first().click();
      await page.locator('#messages').getByText('hello from the test').waitFor();
      await shot('pubsub-messages');
    });
    // Browsing did not consume it: the subscriber still gets it.
    const got = await fetch(channelUrl('/svc/pubsub/topic/orders/new'), { method: 'PATCH', headers: { authorization: auth } });
    expect(await got.text()).toContain('hello from the test');
  });

  it('shows recent requests by CID, per-channel charts and the deployed services', async () => {
    for (let i = 0; i < 3; i++) expect(await call('/hello')).toBe(200);
    await step(page, 'traffic', async () => {
      await go('#/traffic', 'Traffic');
      await page.locator('#recent').getByText('GET /hello').first().waitFor();
      await expect.poll(() => page.locator('.chart h3').allTextContents()).toContain('hello');
      await shot('traffic');
    });
    await step(page, 'services', async () => {
      await go('#/services', 'Services');
      const echo = page.locator('#services tr[data-name="echo"]');
      // What the list shows of each service: its file, its state and the channels bound to it.
      expect(await echo.locator('td').allTextContents()).toEqual(['echo', 'echo.ts', 'serving', expect.stringContaining('hello')]);
      await echo.getByRole('link', { name: 'echo' }).click();
      await expect.poll(() => page.locator('#source').inputValue()).toContain("import { service } from 'svc/sdk'");
    });
  });

  it('uploads a service; a version that does not compile is refused in red at the source, and the good one keeps serving', async () => {
    const good = (word: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: '${word}' }) });\n`;
    await create('channel_rest', { name: 'uploaded', url_path: '/uploaded', service: 'uploaded', security: 'none' });
    await step(page, 'upload-good', async () => {
      await go('#/services', 'Services');
      await page.locator('#upload-file').fill('uploaded.ts');
      await page.locator('#upload-source').fill(good('first'));
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'uploaded.ts deployed' }).waitFor();
      await page.locator('#services tr[data-name="uploaded"] td[data-state="serving"]').waitFor();
    });
    expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'first' });
    await step(page, 'upload-broken', async () => {
      await page.locator('#upload-file').fill('uploaded.ts');
      await page.locator('#upload-source').fill(`import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: ) });\n`);
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.locator('#flash.error').filter({ hasText: 'not deployed: uploaded.ts:2:' }).waitFor();
      const atSource = page.locator('.field-error[data-path="source"]');
      await expect.poll(() => atSource.textContent()).toMatch(/^uploaded\.ts:2:\d+: /);
      // Red: the field's own error colour, and the field marked invalid.
      expect(await atSource.evaluate((n) => getComputedStyle(n).color)).toBe('rgb(179, 38, 30)');
      expect(await page.locator('.field.invalid #upload-source').count()).toBe(1);
      expect(await page.locator('#flash').getAttribute('class')).toContain('error');
      await shot('upload-refused');
    });
    // Refused whole: the good version serves, and the list still says so.
    expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'first' });
    expect(readFileSync(join(k.servicesDir, 'uploaded.ts'), 'utf8')).toBe(good('first'));
    await go('#/services', 'Services');
    expect(await page.locator('#services tr[data-name="uploaded"] td').nth(2).textContent()).toBe('serving');
  });

  it("shows a service's deploy history, the changes between two versions, and rolls back to the first after asking", async () => {
    const good = (word: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: '${word}' }) });\n`;
    // The test before uploaded 'first' (and a version that did not compile, which is no version); a second one now.
    expect((await api.send('POST', '/admin/api/ops/services.upload', { file: 'uploaded.ts', source: good('second') })).status).toBe(200);
    expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'second' });
    await step(page, 'history', async () => {
      await go('#/services/uploaded', 'uploaded');
      const rows = page.locator('#versions tr[data-version]');
      await expect.poll(() => rows.count()).toBe(2);
      expect(await rows.nth(0).locator('td').allTextContents()).toEqual(['2', expect.stringMatching(/ UTC$/), 'upload by admin', expect.any(String), expect.stringMatching(/^[0-9a-f]{12}$/), 'serving']);
      expect(await rows.nth(1).locator('td').nth(2).textContent()).toBe('upload by admin');
      await page.getByRole('button', { name: 'Compare' }).click();
      await page.locator('#diff .del').filter({ hasText: "word: 'first'" }).waitFor();
      expect(await page.locator('#diff .add').allTextContents()).toEqual([expect.stringContaining("word: 'second'")]);
      expect(await page.locator('#diff .help').textContent()).toBe('1 line removed, 1 line added from version 1 to 2');
      // The changed line reads as its old text, then its new.
      expect(await page.locator('#diff .del, #diff .add').allTextContents()).toEqual([expect.stringContaining("word: 'first'"), expect.stringContaining("word: 'second'")]);
      await shot('deploy-history');
    });
    await step(page, 'rollback', async () => {
      // Asked first: dismissed, nothing changes; accepted, version 1 serves again as version 3.
      page.once('dialog', (d) => void d.dismiss());
      await page.getByRole('button', { name: 'Roll back to 1' }).click();
      expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'second' });
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Roll back to 1' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'uploaded: version 1 deployed again, now version 3' }).waitFor();
      await expect.poll(() => page.locator('#versions tr[data-version]').count()).toBe(3);
      expect(await page.locator('#versions tr[data-version="3"] td').nth(2).textContent()).toBe('rollback by admin');
    });
    expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'first' });
    expect(readFileSync(join(k.servicesDir, 'uploaded.ts'), 'utf8')).toBe(good('first'));
  });

  it('edits a service in the browser: Check marks a compile error at its line, Deploy serves the fixed version', async () => {
    const good = (word: string) => `import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ word: '${word}' }) });\n`;
    await step(page, 'editor', async () => {
      await go('#/services/uploaded', 'uploaded');
      const source = page.locator('#source');
      await expect.poll(() => source.inputValue()).toBe(good('first'));
      await source.fill(`import { service } from 'svc/sdk';\n\nexport default service({ handle: () => ({ word: ) });\n`);
      await page.getByRole('button', { name: 'Check' }).click();
      await expect.poll(() => page.locator('#editor-errors').textContent()).toMatch(/^uploaded\.ts:3:\d+: /);
      // The line marked in the gutter, the cursor put on it; nothing deployed.
      expect(await page.locator('.gutter span.bad').textContent()).toBe('3\n');
      const cursorLine = await source.evaluate((t: HTMLTextAreaElement) => t.value.slice(0, t.selectionStart).split('\n').length);
      expect(cursorLine).toBe(3);
      await shot('editor-error');
      expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'first' });
      // Deploy refuses it too, marking the same line.
      await page.getByRole('button', { name: 'Deploy' }).click();
      await page.locator('#flash.error').filter({ hasText: 'not deployed' }).waitFor();
      expect(await page.locator('.gutter span.bad').textContent()).toBe('3\n');
      await source.fill(good('edited'));
      await page.getByRole('button', { name: 'Check' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'uploaded.ts compiles' }).waitFor();
      expect(await page.locator('.gutter span.bad').count()).toBe(0);
      await page.getByRole('button', { name: 'Deploy' }).click();
      await page.locator('#flash.ok').filter({ hasText: 'uploaded.ts deployed' }).waitFor();
    });
    expect(await (await fetch(channelUrl('/uploaded'))).json()).toEqual({ word: 'edited' });
    expect(readFileSync(join(k.servicesDir, 'uploaded.ts'), 'utf8')).toBe(good('edited'));
  });

  it("runs a service's own tests from its page and shows what they printed", async () => {
    writeFileSync(
      join(k.servicesDir, 'echo.test.ts'),
      `import { expect, test, testService } from 'svc/sdk/testing';\nconst echo = testService('echo');\ntest('answers without a user', async () => { expect((await echo.get()).body).toEqual({ user: null }); });\ntest('a wrong expectation fails', async () => { expect((await echo.get()).body).toEqual({ user: 'someone' }); });\n`,
    );
    await step(page, 'run-tests', async () => {
      await go('#/services/echo', 'echo');
      await page.getByRole('button', { name: 'Run its tests' }).click();
      const out = page.locator('#test-output.failed');
      await out.waitFor({ timeout: 60_000 });
      expect(await out.textContent()).toMatch(/answers without a user[\s\S]*a wrong expectation fails/);
    });
  }, 90_000);

  it('downloads the OpenAPI documents', async () => {
    await create('channel_rest', { name: 'documented', url_path: '/documented', service: 'echo', security: 'none' });
    await step(page, 'downloads', async () => {
      await go('#/downloads', 'Downloads');
      await shot('downloads');
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#spec').click()]);
      const doc = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { openapi: string; paths: Record<string, unknown> };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths).some((p) => p.includes('pubsub'))).toBe(true);
      expect(Object.keys(doc.paths)).toContain('/hello');
    });
    await step(page, 'channels-openapi', async () => {
      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#channels-spec').click()]);
      expect(download.suggestedFilename()).toBe('svc-channels-openapi.json');
      const doc = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { openapi: string; paths: Record<string, Record<string, { security?: unknown }>> };
      expect(doc.openapi).toBe('3.1.0');
      expect(openApiProblems(doc)).toEqual([]);
      // Only the channels, the one created at run time included.
      expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/hello', '/fail', '/documented']));
      expect(Object.keys(doc.paths).some((p) => p.includes('pubsub'))).toBe(false);
    });
    await step(page, 'demo-import', async () => {
      await page.locator('#demo').click();
      await page.locator('pre.json').getByText('demo.user.1').first().waitFor();
    });
    // The demo topics exist now (in memory: they do not survive a restart).
    const topics = (await api.send('POST', '/admin/api/ops/pubsub.topics', {})).body.result as Array<{ name: string }>;
    expect(topics.map((t) => t.name)).toContain('/demo/orders');
  });

  it('lists resources with their fields, with search, and every section of the catalogue has a page', async () => {
    await create('channel_rest', { name: 'listed', url_path: '/listed/{id}', service: 'echo', method: 'GET', security: 'none' });
    await step(page, 'lists', async () => {
      await go('#/r/channel_rest', 'channel_rest');
      // Each row shows the entry's fields, not only its name.
      const cells = async (name: string) => Object.fromEntries(await page.locator(`table.list tbody tr[data-name="${name}"] td[data-column]`).evaluateAll((tds) => tds.map((td) => [td.getAttribute('data-column'), td.textContent])));
      await page.locator('table.list tbody tr[data-name="listed"]').waitFor();
      expect(await cells('listed')).toMatchObject({ url_path: '/listed/{id}', service: 'echo', method: 'GET' });
      expect(await cells('hello')).toMatchObject({ url_path: '/hello', service: 'echo' });
      expect(await cells('fail')).toMatchObject({ url_path: '/fail', service: 'boom', method: 'POST' });
      // The columns a channel's schema marks for lists, with their titles, and where each entry comes from.
      expect(await page.locator('#entries thead th').allTextContents()).toEqual(['Name ▲', 'URL path', 'Method', 'Service', 'Security', 'Data format', 'Use queue', 'From', '']);
      expect((await cells('listed')).source).toBe('admin edit');
      expect((await cells('hello')).source).toBe('config file');
      expect(await cells('fail')).toMatchObject({ use_queue: 'true' });
      const total = await page.locator('table.list tbody tr').count();
      expect(await page.locator('#count').textContent()).toBe(`${total} entries`);
      await page.locator('#search').fill('listed');
      await expect.poll(() => page.locator('table.list tbody tr').count()).toBe(1);
      expect(await page.locator('#count').textContent()).toBe(`1 of ${total} entries match`);
      // Search in one field: `boom` is a service name, and no channel's path.
      await page.locator('#search').fill('boom');
      await page.locator('#search-field').selectOption('url_path');
      await expect.poll(() => page.locator('table.list tbody tr').count()).toBe(0);
      await page.locator('#search-field').selectOption('service');
      await expect.poll(() => page.locator('table.list tbody tr').count()).toBeGreaterThan(0);
      for (const service of await page.locator('table.list tbody td[data-column="service"]').allTextContents()) expect(service).toBe('boom');
      await page.locator('#search').fill('');
      // Sorted by a column on a click of its header, the other way on a second.
      const paths = () => page.locator('table.list tbody td[data-column="url_path"]').allTextContents();
      await page.locator('#entries th[data-column="url_path"]').click();
      const ascending = await paths();
      expect(ascending).toEqual([...ascending].sort((a, b) => a.localeCompare(b, undefined, { numeric: true })));
      await page.locator('#entries th[data-column="url_path"]').click();
      expect(await paths()).toEqual([...ascending].reverse());
      await shot('channels');
      // Pages of 50: 60 more channels make two pages.
      const many = Array.from({ length: 60 }, (_, i) => ({ name: `bulk-${i}`, url_path: `/bulk/${i}`, service: 'echo', security: 'none' }));
      expect((await api.send('POST', '/admin/api/import', { channel_rest: many })).status).toBe(200);
      await page.reload();
      await page.locator('#page').waitFor();
      expect(await page.locator('#page').textContent()).toBe(`page 1 of 2`);
      expect(await page.locator('table.list tbody tr').count()).toBe(50);
      await page.locator('#next').click();
      expect(await page.locator('#page').textContent()).toBe('page 2 of 2');
      expect(await page.locator('table.list tbody tr').count()).toBe(total + 60 - 50);
      expect(await page.locator('#next').isDisabled()).toBe(true);
      await go('#/r/security', 'security');
      await page.locator('table.list tbody tr[data-name="app"]').waitFor();
      expect(await page.locator('table.list tbody tr[data-name="app"] td[data-column="type"]').textContent()).toBe('basic_auth');
      // An endpoint's topic patterns read as a list, not as JSON.
      await go('#/r/pubsub_endpoint', 'pubsub_endpoint');
      await page.locator('table.list tbody tr[data-name="orders.app"]').waitFor();
      expect(await page.locator('#entries thead th').allTextContents()).toEqual(['Name ▲', 'Security', 'Publishes to', 'Subscribes to', 'From']);
      expect(await page.locator('table.list tbody tr[data-name="orders.app"] td[data-column="pub"]').textContent()).toBe('/orders/*');
      // A job's schedule, whichever of every, cron or at gives it.
      await go('#/r/scheduler_job', 'scheduler_job');
      await page.locator('table.list tbody tr[data-name="nightly-sync"]').waitFor();
      expect(await page.locator('#entries thead th').allTextContents()).toEqual(['Name ▲', 'Service', 'Every', 'Cron', 'At', 'Enabled', 'From']);
      expect(await page.locator('table.list tbody tr[data-name="nightly-sync"] td[data-column="cron"]').textContent()).toBe('30 2 * * *');
      // A field the entry leaves out shows its default: the job is enabled, not blank.
      expect(await page.locator('table.list tbody tr[data-name="nightly-sync"] td[data-column="enabled"]').textContent()).toBe('true');
      const sections = (await api.send('GET', '/admin/api/resources')).body.sections as Array<{ name: string }>;
      for (const s of sections) {
        await go(`#/r/${s.name}`);
        await page.locator('h1').waitFor();
        await expect.poll(() => page.locator('#new').count()).toBe(1);
      }
    });
  });

  it('purges a channel\'s stored answers from the channel list', async () => {
    await create('channel_rest', { name: 'cached', url_path: '/cached', service: 'echo', security: 'none', response_cache: { ttl: '10m' } });
    const cache = async () => (await fetch(channelUrl('/cached'))).headers.get('x-svc-cache');
    expect([await cache(), await cache()]).toEqual(['MISS', 'HIT']);
    await step(page, 'purge', async () => {
      await go('#/r/channel_rest', 'channel_rest');
      // Past the first page of channels (the list test added 60): found by its name.
      await page.locator('#search').fill('cached');
      const row = page.locator('table.list tbody tr[data-name="cached"]');
      await row.waitFor();
      // Only channels that cache have the button.
      expect(await page.locator('table.list tbody tr[data-name="hello"] button').count()).toBe(0);
      await row.getByRole('button', { name: 'Purge cache' }).click();
      await page.locator('#flash.ok').filter({ hasText: "channel 'cached': 1 stored answer(s) purged" }).waitFor();
    });
    expect(await cache()).toBe('MISS');
  });
});
