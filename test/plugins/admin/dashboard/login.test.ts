import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { closePage, openPage, step, submitLogin } from '../../../helpers/browser.ts';
import { ManualClock } from '../../../../kernel/platform/clock.ts';
import { ADMIN_PASSWORD, AdminClient, startAdmin, type AdminKernel } from '../api/support.ts';

/**
 * The Dashboard's login in headless Chromium, on a server of its own (its throttle would hold the
 * other suites' logins): the throttle's wait is shown and counted down, the button held until
 * then; the refused logins are in the audit log, which says what each edit changed.
 */
/** The server's clock: the throttle's minute passes when the test says (the page counts down on the browser's own). */
const clock = new ManualClock();
let k: AdminKernel;
let page: Page;

beforeAll(async () => {
  k = await startAdmin({ clock, config: 'plugins:\n  admin: { config: { login_failures_per_minute: 2 } }\nchannel_rest:\n  - { name: hello, url_path: /hello, service: echo, security: none }\n' });
  page = await openPage();
}, 60_000);
afterAll(async () => {
  await closePage(page);
  await k?.close();
});

describe('the Dashboard login', () => {
  it("shows the throttle's wait, counted down, and holds the button until it passes", async () => {
    await step(page, 'login-throttled', async () => {
      await page.goto(`${k.admin}/admin/#/login`);
      for (let i = 0; i < 2; i++) {
        await submitLogin(page, 'wrong');
        await page.locator('#flash.error').filter({ hasText: 'Wrong username or password' }).waitFor();
        await page.evaluate(() => {
          document.getElementById('flash')!.textContent = '';
        });
      }
      await submitLogin(page, 'wrong');
      const wait = page.locator('#login-wait');
      await expect.poll(() => wait.textContent()).toMatch(/^Too many failed logins from this address: try again in \d+ s\.$/);
      expect(await page.getByRole('button', { name: 'Log in' }).isDisabled()).toBe(true);
      const first = Number(/in (\d+) s/.exec((await wait.textContent())!)![1]);
      // Counted down, once a second.
      await expect.poll(async () => Number(/in (\d+) s/.exec((await wait.textContent()) ?? '')?.[1] ?? NaN), { timeout: 4_000 }).toBeLessThan(first);
    });
    // The API says how long: the same throttle the page shows. The refusals past the throttle are not audited (it bounds the rows).
    const api = new AdminClient(k.admin);
    const refused = await api.login();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('leads back to the page asked for before the login (a link to a service, a bookmark)', async () => {
    clock.advance(61_000);
    await page.context().clearCookies();
    await step(page, 'login-returns', async () => {
      await page.goto(`${k.admin}/admin/#/services/echo`);
      // The page was on the login form already (the test before): going to a hash is a navigation
      // within the document, so the old form stays until the session check sends the page to the login.
      await page.waitForURL(/#\/login$/);
      await page.locator('#password').waitFor();
      await submitLogin(page, ADMIN_PASSWORD);
      await page.getByRole('heading', { level: 1, name: 'echo', exact: true }).waitFor();
      expect(page.url()).toMatch(/#\/services\/echo$/);
      // Logged out and in again from the login page itself: the overview, not the page of before.
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.locator('#password').waitFor();
      await submitLogin(page, ADMIN_PASSWORD);
      await page.locator('h1', { hasText: 'Overview' }).waitFor();
    });
  });

  it('lists refused logins and what an edit changed in the audit log', async () => {
    clock.advance(61_000);
    const api = new AdminClient(k.admin);
    expect((await api.login()).status).toBe(200);
    expect((await api.put('/admin/api/resources/channel_rest/hello', { url_path: '/hi', service: 'echo', security: 'none' })).status).toBe(200);
    await page.context().addCookies([{ name: 'svc_admin_session', value: api.cookie!.split('=')[1]!, url: k.admin }]);
    await page.evaluate((csrf) => sessionStorage.setItem('svc-csrf', csrf!), api.csrf);
    await step(page, 'audit-changes', async () => {
      await page.goto(`${k.admin}/admin/#/audit`);
      await page.locator('h1', { hasText: 'Audit log' }).waitFor();
      const rows = page.locator('#audit tr');
      await expect.poll(() => rows.filter({ hasText: 'login (failed)' }).count()).toBe(2);
      expect(await rows.filter({ hasText: 'login (failed)' }).first().locator('td.change').textContent()).toMatch(/^from .*127\.0\.0\.1/);
      expect(await rows.filter({ hasText: 'channel_rest / hello' }).locator('td.change').textContent()).toBe('url_path: "/hello" → "/hi"');
    });
  });
});
