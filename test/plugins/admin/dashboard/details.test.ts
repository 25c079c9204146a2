import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleMessage, Page } from 'playwright-core';
import { closePage, openPage, step, submitLogin } from '../../../helpers/browser.ts';
import { ADMIN_PASSWORD, startAdmin, type AdminKernel } from '../api/support.ts';

/**
 * The Dashboard's small things, in Chromium: a page load asks for nothing that is not there (the
 * icon is in the page), counts read as people say them, descriptions show their `code` as code,
 * and an address with no page says so.
 */

const CONFIG = `
channel_rest:
  - { name: flaky, url_path: /flaky, service: boom, security: none }
`;
const BOOM = `import { service } from 'svc/sdk';\nexport default service({ handle() { throw new Error('down'); } });\n`;

let k: AdminKernel;
let page: Page;
const messages: ConsoleMessage[] = [];

beforeAll(async () => {
  k = await startAdmin({ config: CONFIG, services: { 'boom.ts': BOOM } });
  page = await openPage();
  page.on('console', (m) => messages.push(m));
  // Signed in once, for every test (each can run alone).
  await page.goto(`${k.admin}/admin/`);
  await submitLogin(page, ADMIN_PASSWORD);
  await page.locator('h1', { hasText: 'Overview' }).waitFor();
}, 60_000);
afterAll(async () => {
  await closePage(page);
  await k?.close();
});

describe('the Dashboard, in detail', () => {
  it('loads with its icon in the page: no request for /favicon.ico, no 404 in the console', async () => {
    await step(page, 'details-favicon', async () => {
      messages.length = 0;
      await page.goto(`${k.admin}/admin/#/`);
      await page.reload();
      await page.locator('h1', { hasText: 'Overview' }).waitFor();
      await page.waitForTimeout(300);
      const notFound = messages.filter((m) => /404|favicon/i.test(`${m.text()} ${m.location().url}`)).map((m) => `${m.text()} ${m.location().url}`);
      expect(notFound).toEqual([]);
      expect(await page.locator('link[rel="icon"]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
    });
  });

  it('says a channel answered 5xx once, and 2 times', async () => {
    await step(page, 'details-once', async () => {
      const attention = page.locator('#attention li', { hasText: 'flaky' });
      // The overview as it is drawn after the calls (read again until the traffic counts them).
      const said = async () => {
        await page.goto(`${k.admin}/admin/#/`);
        await page.reload();
        await page.locator('h1', { hasText: 'Overview' }).waitFor();
        return (await attention.count()) ? attention.textContent() : '';
      };
      expect((await fetch(`${k.url}/flaky`)).status).toBe(500);
      await expect.poll(said, { timeout: 15_000 }).toBe('flaky answered 5xx once of 1 in 15 minutes: service boom');
      expect((await fetch(`${k.url}/flaky`)).status).toBe(500);
      await expect.poll(said, { timeout: 15_000 }).toBe('flaky answered 5xx 2 times of 2 in 15 minutes: service boom');
    });
  });

  it("shows a description's `code` as code, not as backticks", async () => {
    await step(page, 'details-code', async () => {
      await page.goto(`${k.admin}/admin/#/`);
      const caches = page.locator('#resource-counts tr[data-section="cache"] td').nth(2);
      await caches.waitFor();
      expect(await caches.textContent()).toContain('(cache(name) in the SDK)');
      expect(await caches.textContent()).not.toContain('`');
      expect(await caches.locator('code').allTextContents()).toEqual(['cache(name)']);
      // No description on the overview shows a backtick.
      expect(await page.locator('#resource-counts').textContent()).not.toContain('`');
      // Nor on the Operations page (an op's description, where it has one, beside its name).
      await page.goto(`${k.admin}/admin/#/ops`);
      const summaries = page.locator('details.op summary');
      await summaries.first().waitFor();
      const texts = await summaries.allTextContents();
      expect(texts.length).toBeGreaterThan(10);
      for (const t of texts) expect(t).not.toMatch(/`|\[object /);
    });
  });

  it('says an address has no page, with a way back to the overview', async () => {
    await step(page, 'details-not-found', async () => {
      await page.goto(`${k.admin}/admin/#/nonsense`);
      const notice = page.locator('#not-found');
      await notice.waitFor();
      expect(await notice.locator('h1').textContent()).toBe('No such page');
      expect(await notice.textContent()).toContain('#/nonsense');
      expect(await page.locator('h1', { hasText: 'Overview' }).count()).toBe(0);
      await notice.getByRole('link', { name: 'Go to the overview' }).click();
      await page.locator('h1', { hasText: 'Overview' }).waitFor();
      expect(await page.locator('#not-found').count()).toBe(0);
      // The overview's own addresses still lead there.
      for (const hash of ['', '#', '#/']) {
        await page.goto(`${k.admin}/admin/${hash}`);
        await page.locator('h1', { hasText: 'Overview' }).waitFor();
      }
    });
  });

  it("counts a node stopped cleanly (the server's last run, before a restart) apart: only a node whose heartbeat is late is down", async () => {
    await step(page, 'details-nodes', async () => {
      const now = Date.now();
      const row = (id: string, name: string, heardAgoMs: number, stopped: boolean) =>
        k.kernel.store.run('INSERT INTO svc_node (id, name, host, pid, version, runtime, started_at, heard_at, stopped_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', [id, name, 'vm', 1, '0', 'v0', now - 60_000, now - heardAgoMs, stopped ? now - heardAgoMs : null]);
      const card = page.locator('#health .card', { hasText: 'Nodes' });
      const nodesCard = async () => {
        await page.goto(`${k.admin}/admin/#/`);
        await page.reload();
        await card.waitFor();
        return { text: await card.textContent(), bad: (await card.getAttribute('class'))?.includes('bad') };
      };
      await row('earlier-run', 'vm:17010', 5_000, true);
      expect(await nodesCard()).toEqual({ text: expect.stringMatching(/^Nodes1 of 1 up1 stopped cleanly$/), bad: false });
      // A node that died without stopping (its heartbeat late) is what the card shows as down.
      await row('died', 'vm:17020', 120_000, false);
      expect(await nodesCard()).toEqual({ text: expect.stringMatching(/^Nodes1 of 2 updown: vm:17020; 1 stopped cleanly$/), bad: true });
      await k.kernel.store.run("DELETE FROM svc_node WHERE id IN ('earlier-run', 'died')");
    });
  });
});
