import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { closePage, openPage, step, submitLogin } from '../../../helpers/browser.ts';
import { ADMIN_PASSWORD, AdminClient, callChannel, startAdmin, type AdminKernel } from '../api/support.ts';
import { createMatrixAccounts, TENANTS_CONFIG, USER_PASSWORD } from '../api/tenants.ts';
import { TENANTS_RUN_HERE } from '../../../helpers/kernel.ts';

// Tenants do not start on Node 20 (docs/tenants.md): these suites run on Node 22 and 24.
describe.runIf(TENANTS_RUN_HERE)('with tenants', () => {

/**
 * The Dashboard in headless Chromium as tenant acme's developer: it sees acme's resources,
 * traffic, audit rows and usage, can change them, and never sees tenant beta's or the
 * platform's. Then as acme's viewer (nothing to change) and owner (its accounts).
 */

let k: AdminKernel;
let page: Page;
/** Every text the pages showed, to check that nothing of the other tenant ever appeared. */
const shown: string[] = [];

beforeAll(async () => {
  k = await startAdmin({ config: TENANTS_CONFIG });
  const admin = new AdminClient(k.admin);
  expect((await admin.login()).status).toBe(200);
  await createMatrixAccounts(admin);
  // Something of beta's in every list a page could show: an admin edit (override, audit row) and traffic.
  expect((await admin.post('/admin/api/resources/channel_rest', { name: 'beta/secret-plans', url_path: '/t/beta/secret-plans', service: 'beta/orders', security: 'none' })).status).toBe(201);
  for (const path of ['/t/acme/orders', '/t/beta/orders', '/t/beta/secret-plans', '/ping']) await callChannel(k, path);
  page = await openPage();
}, 60_000);
afterAll(async () => {
  await closePage(page);
  await k?.close();
});

async function go(hash: string, heading: string): Promise<void> {
  await page.goto(`${k.admin}/admin/${hash}`);
  await page.locator('h1', { hasText: heading }).waitFor();
  // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node: the text as the page shows it
  shown.push(await page.locator('body').innerText());
}

async function logIn(username: string): Promise<void> {
  await page.context().clearCookies();
  await page.goto(`${k.admin}/admin/#/login`);
  await submitLogin(page, USER_PASSWORD, username);
  await page.locator('#who', { hasText: username }).waitFor();
}

describe("the Dashboard as a tenant's developer", () => {
  it("logs in as acme/dev and sees acme's resources only", async () => {
    await step(page, 'tenant-login', async () => {
      await logIn('acme/dev');
      expect(await page.locator('#who').textContent()).toBe('acme/dev (developer of acme)');
      const nav = page.locator('nav');
      await nav.getByRole('link', { name: 'REST channels' }).waitFor();
      expect(await nav.getByRole('link', { name: 'Tenants', exact: true }).count()).toBe(0);
      expect(await nav.getByRole('link', { name: 'Accounts' }).count()).toBe(0);
      await go('#/r/channel_rest', 'channel_rest');
      const rows = await page.locator('table.list tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-name')));
      expect(rows).toEqual(['acme/orders']);
    });
  });

  it('creates a channel with short names; it is stored in acme', async () => {
    await step(page, 'tenant-create', async () => {
      await go('#/r/channel_rest/+new', 'New in REST channels');
      await page.locator('#f-name').fill('shop');
      await page.locator('#f-url_path').fill('/shop');
      await page.locator('#f-service').fill('orders');
      await page.locator('#f-security').fill('none');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.locator('h1', { hasText: 'acme/shop' }).waitFor();
      expect(await page.locator('#f-url_path').inputValue()).toBe('/t/acme/shop');
      expect(await page.locator('#f-service').inputValue()).toBe('acme/orders');
    });
  });

  it("cannot open beta's channel: the page says it was not found and shows nothing of it", async () => {
    await step(page, 'tenant-other', async () => {
      await page.goto(`${k.admin}/admin/#/r/channel_rest/${encodeURIComponent('beta/secret-plans')}`);
      await page.locator('#flash.error').waitFor();
      expect(await page.locator('#flash').textContent()).toContain('No channel_rest entry');
      expect(await page.locator('#f-url_path').count()).toBe(0);
    });
  });

  it("traffic, audit log and the tenant page show acme's only, with CPU against its quota", async () => {
    await step(page, 'tenant-runtime', async () => {
      await go('#/traffic', 'Traffic');
      await page.locator('#recent tbody tr').first().waitFor();
      const channels = await page.locator('#recent tbody tr td:nth-child(3)').allTextContents();
      expect(channels.length).toBeGreaterThan(0);
      expect(new Set(channels)).toEqual(new Set(['acme/orders']));
      // biome-ignore lint/performance/useDomNodeTextContent: a Playwright locator, not a DOM node: the text as the page shows it
      shown.push(await page.locator('body').innerText());
      await go('#/audit', 'Audit log');
      const tenants = await page.locator('#audit tr td:nth-child(3)').allTextContents();
      expect(tenants.length).toBeGreaterThan(0);
      expect(new Set(tenants)).toEqual(new Set(['acme']));
      await go('#/usage', 'Tenant acme');
      expect(await page.locator('#usage tr[data-tenant]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-tenant')))).toEqual(['acme']);
      expect(await page.locator('#usage td[data-column="cpu"]').textContent()).toMatch(/^\d+ ms of 6000 ms per minute$/);
      await go('#/ops', 'Operations');
      expect(await page.locator('form.op[data-op="config.export"]').count()).toBe(0);
      expect(await page.locator('form.op[data-op="queue.replay"]').count()).toBe(1);
    });
  });

  it('never showed anything of beta or of the platform', () => {
    expect(shown.length).toBeGreaterThan(4);
    for (const text of shown) expect(text).not.toMatch(/beta\/|secret-plans|\bping\b/);
  });
});

describe("the Dashboard as a tenant's viewer and owner", () => {
  it('a viewer gets no New, Save or Delete', async () => {
    await step(page, 'tenant-viewer', async () => {
      await logIn('acme/viewer');
      await go('#/r/channel_rest', 'channel_rest');
      expect(await page.locator('#new').count()).toBe(0);
      await go(`#/r/channel_rest/${encodeURIComponent('acme/orders')}`, 'acme/orders');
      expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
      expect(await page.locator('#delete').count()).toBe(0);
    });
  });

  it("an owner adds an account to its tenant from the Accounts page", async () => {
    await step(page, 'tenant-owner', async () => {
      await logIn('acme/owner');
      await go('#/accounts', 'Accounts of acme');
      await page.locator('#user-name').fill('tester');
      await page.locator('#user-password').fill(USER_PASSWORD);
      await page.locator('#user-role').selectOption('viewer');
      await page.getByRole('button', { name: 'Add account' }).click();
      await page.locator('#users tr[data-name="acme/tester"]').waitFor();
      const names = await page.locator('#users tr[data-name]').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-name')));
      expect(names).toEqual(['acme/dev', 'acme/owner', 'acme/tester', 'acme/viewer']);
      expect(await page.locator('#user-tenant').count()).toBe(0);
    });
  });
});

describe("what a tenant's own config writes", () => {
  it("shows it to the tenant's developer, read only, saying where it is written", async () => {
    const config = TENANTS_CONFIG.replace('{ name: acme, ', '{ name: acme, config: { cache: [{ name: store, services: [orders] }] }, ');
    expect(await k.writeConfig(config)).toBe(true);
    try {
      await step(page, 'tenant-config-entry', async () => {
        await logIn('acme/dev');
        await go('#/r/cache', 'Caches');
        const row = page.locator('tr[data-name="acme/store"]');
        await row.waitFor();
        expect(await row.locator('td[data-column="source"]').textContent()).toBe("tenant's config");
        await go(`#/r/cache/${encodeURIComponent('acme/store')}`, 'acme/store');
        expect(await page.locator('#read-only').textContent()).toBe('Read only: written in tenants[acme].config.cache[0]; change it there.');
        expect(await page.locator('#delete').count()).toBe(0);
        expect(await page.getByRole('button', { name: 'Save' }).count()).toBe(0);
      });
    } finally {
      expect(await k.writeConfig(TENANTS_CONFIG)).toBe(true);
    }
  });
});

describe("the Dashboard as the platform's administrator", () => {
  it("names a tenant's config file whose save was refused, with the line in that file; a good save clears it", async () => {
    const file = join(k.dir, 'beta.yaml');
    writeFileSync(file, 'cache:\n  - { name: store }\n');
    const config = TENANTS_CONFIG.replace('{ name: beta, ', `{ name: beta, config_file: ${file}, `);
    expect(await k.writeConfig(config)).toBe(true);
    writeFileSync(file, 'cache:\n  - { name: store }\n  - { name: store2, max_entriez: 5 }\n');
    await step(page, 'tenant-file-refused', async () => {
      await page.context().clearCookies();
      await page.goto(`${k.admin}/admin/#/login`);
      await submitLogin(page, ADMIN_PASSWORD, 'admin');
      await page.locator('#who', { hasText: 'admin' }).waitFor();
      await expect.poll(async () => {
        await go('#/', 'Overview');
        return page.locator('#config-refused').count();
      }, { timeout: 10_000 }).toBe(1);
      const banner = page.locator('#config-refused');
      expect(await banner.locator('strong').textContent()).toMatch(new RegExp(`^The tenant config file ${file} was refused at \\S+: the running config stays\\.$`));
      expect(await banner.locator('li').first().textContent()).toBe(`line 3: tenants[beta].config_file (${file}).cache[1].max_entriez: unknown key`);
    });
    writeFileSync(file, 'cache:\n  - { name: store }\n');
    await expect.poll(() => k.kernel.configStore.refusal, { timeout: 5_000 }).toBeUndefined();
    await page.reload();
    await page.locator('#attention').waitFor();
    expect(await page.locator('#config-refused').count()).toBe(0);
    expect(await k.writeConfig(TENANTS_CONFIG)).toBe(true);
  });
});
});
