/**
 * Issue 44: what the Dashboard costs a browser. Its weight (the files it loads: no build step,
 * nothing bundled or minified; raw and gzip bytes) and, in headless Chromium, the first
 * contentful paint of the login page and the time until the overview is drawn after login,
 * against a baseline in the same run: a static page of one heading and one small stylesheet
 * served by node:http on this machine, which is as fast as a page can paint here. Each load in a
 * fresh browser context (no cache), cases interleaved, medians of BENCH_ROUNDS × 5 loads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { freePort, median, printGrid, ROUNDS, startSvcCli } from '../lib.ts';

const ASSETS = fileURLToPath(new URL('../../plugins/admin/dashboard/assets/', import.meta.url));
const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
const LOADS = ROUNDS * 5;

const BASELINE_HTML = '<!doctype html><html><head><link rel="stylesheet" href="/b.css"><title>baseline</title></head><body><h1>Baseline</h1></body></html>';
const BASELINE_CSS = 'body { font: 14px system-ui; } h1 { font-size: 1.4rem; }';

function weights(): string[][] {
  const rows: string[][] = [];
  let raw = 0;
  let gz = 0;
  for (const file of readdirSync(ASSETS).sort()) {
    if (!['.js', '.css', '.html'].includes(extname(file))) continue;
    const bytes = readFileSync(join(ASSETS, file));
    const zipped = gzipSync(bytes).length;
    raw += bytes.length;
    gz += zipped;
    rows.push([file, String(bytes.length), String(zipped)]);
  }
  rows.push(['**all, loaded by the first page**', `**${raw}**`, `**${gz}**`]);
  return rows;
}

/** One load in a fresh context: first contentful paint, and the time until `ready` is in the page (ms from navigation start). */
async function load(browser: Browser, url: string, ready: string, cookie?: { name: string; value: string; url: string }): Promise<{ fcp: number; drawn: number }> {
  const context = await browser.newContext();
  try {
    if (cookie) await context.addCookies([cookie]);
    const page = await context.newPage();
    await page.goto(url);
    await page.locator(ready).first().waitFor({ timeout: 15_000 });
    return await page.evaluate(() => ({
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      drawn: performance.now(),
    }));
  } finally {
    await context.close();
  }
}

export async function run(): Promise<void> {
  printGrid('Dashboard weight: the files of plugins/admin/dashboard/assets, as served (no build step)', ['file', 'bytes', 'gzip bytes'], weights());

  const baseline = createServer((req, res) => {
    if (req.url === '/b.css') res.writeHead(200, { 'content-type': 'text/css' }).end(BASELINE_CSS);
    else res.writeHead(200, { 'content-type': 'text/html' }).end(BASELINE_HTML);
  });
  await new Promise<void>((r) => baseline.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/`;
  const adminPort = await freePort();
  const admin = `http://127.0.0.1:${adminPort}`;
  const svc = await startSvcCli({ channel_rest: [{ name: 'hello', url_path: '/hello', service: 'hello', security: 'none' }] }, { 'hello.ts': "import { service } from 'svc/sdk';\nexport default service({ handle: () => ({ ok: true }) });\n" }, '/hello', undefined, { SVC_ADMIN_PORT: String(adminPort) });
  let browser: Browser | undefined;
  try {
    // The admin listener may come up just after the channels answer.
    for (let i = 0; i < 100 && !(await fetch(`${admin}/admin/`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
    // In the startup summary, written just after the server listens.
    const passwordIn = () => /the admin password is (\S+)/.exec(readFileSync(join(svc.dir, 'server.log'), 'utf8'))?.[1];
    for (let i = 0; i < 50 && !passwordIn(); i++) await new Promise((r) => setTimeout(r, 100));
    const password = passwordIn();
    if (!password) throw new Error('no admin password in the server log');
    const login = await fetch(`${admin}/admin/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
    const session = /svc_admin_session=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')?.[1];
    if (!session) throw new Error(`login failed: ${login.status}`);
    const cookie = { name: 'svc_admin_session', value: session, url: admin };
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    const cases = [
      { name: 'baseline: a static page (one heading, one stylesheet), node:http', url: baseUrl, ready: 'h1' },
      { name: 'Dashboard login page', url: `${admin}/admin/#/login`, ready: '#password' },
      { name: 'Dashboard overview, signed in (its 7 API calls answered and drawn)', url: `${admin}/admin/#/`, ready: '#attention', cookie },
    ];
    const results = cases.map(() => ({ fcp: [] as number[], drawn: [] as number[] }));
    // Warm-up: the server's first answers and Chromium's first process.
    for (const c of cases) await load(browser, c.url, c.ready, c.cookie);
    for (let i = 0; i < LOADS; i++) {
      for (let k = 0; k < cases.length; k++) {
        const at = (i + k) % cases.length;
        const c = cases[at]!;
        const r = await load(browser, c.url, c.ready, c.cookie);
        results[at]!.fcp.push(r.fcp);
        results[at]!.drawn.push(r.drawn);
      }
    }
    const baseFcp = median(results[0]!.fcp);
    const baseDrawn = median(results[0]!.drawn);
    printGrid(
      `Dashboard first paint in headless Chromium (medians of ${LOADS} loads each, fresh context, interleaved)`,
      ['case', 'first contentful paint ms', 'vs baseline', 'drawn ms', 'vs baseline'],
      cases.map((c, k) => {
        const fcp = median(results[k]!.fcp);
        const drawn = median(results[k]!.drawn);
        return [c.name, fcp.toFixed(1), (fcp / baseFcp).toFixed(2), drawn.toFixed(1), (drawn / baseDrawn).toFixed(2)];
      }),
    );
  } finally {
    await browser?.close();
    await svc.stop();
    baseline.close();
  }
}
