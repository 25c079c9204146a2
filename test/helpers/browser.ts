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
