import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's Chromium, as .ci/run installs it; playwright-core never downloads a browser here. */
export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ARGS });
}

/** Where failing browser tests leave their screenshots (kept out of git by .gitignore). */
export const SCREENSHOT_DIR = join(import.meta.dirname, '../../.scratch/screenshots');

/** Runs a browser step; on failure saves a screenshot named after it, then rethrows. */
export async function step<T>(page: Page, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const file = join(SCREENSHOT_DIR, `${name.replace(/[^a-z0-9-]+/gi, '-')}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    throw Object.assign(err as Error, { message: `${(err as Error).message}\n(screenshot: ${file})` });
  }
}

/**
 * Chromium with one page, as the Dashboard's suites drive it: 1280×860, and an action that waits
 * fails after 8 s (well within a test's time, with the reason the page shows). Close it with
 * closePage.
 */
export async function openPage(): Promise<Page> {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.setDefaultTimeout(8_000);
    return page;
  } catch (err) {
    await browser.close();
    throw err;
  }
}

/** Closes the browser of a page openPage opened (none opened: nothing to do, as in an afterAll after a failed beforeAll). */
export async function closePage(page: Page | undefined): Promise<void> {
  await page?.context().browser()?.close();
}

/** Fills the Dashboard's login form (the username too when given; without, the form's own, admin) and submits it. */
export async function submitLogin(page: Page, password: string, username?: string): Promise<void> {
  if (username !== undefined) await page.locator('#username').fill(username);
  await page.locator('#password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** Where `SVC_SCREENSHOTS=1` writes the Dashboard's pictures: docs/img/, the README's. */
const DOC_SHOTS = join(import.meta.dirname, '../../docs/img');

/** With `SVC_SCREENSHOTS=1`, the page as it is now, as docs/img/NAME.png (how the README's pictures are made); else nothing. */
export async function docShot(page: Page, name: string): Promise<void> {
  if (!process.env.SVC_SCREENSHOTS) return;
  mkdirSync(DOC_SHOTS, { recursive: true });
  await page.screenshot({ path: join(DOC_SHOTS, `${name}.png`) });
}
