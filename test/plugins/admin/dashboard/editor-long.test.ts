import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { closePage, openPage, step, submitLogin } from '../../../helpers/browser.ts';
import { ADMIN_PASSWORD, startAdmin, type AdminKernel } from '../api/support.ts';

/**
 * The service editor (assets/editor.js) on a file longer than its frame, in Chromium: the coloured
 * text people see and the textarea that takes their clicks and keys must show the same line at the
 * same place, scrolled down and across; the gutter's numbers and its compile-error mark beside
 * their lines; completions under the caret. Each position is read from what is drawn (the
 * highlight's glyphs, the gutter's numbers) and checked against where the textarea puts the caret.
 */

const LINES = 130;
/** Line `n` (1-based): every tenth one longer than 250 characters, each with a word of its own at its end. */
function lineOf(n: number): string {
  return n % 10 === 0 ? `    out.push('line ${n}: ${'long '.repeat(50)}end_${n}');` : `    out.push('line ${n}');`;
}
const HEAD = ["import { service } from 'svc/sdk';", '', 'export default service({', '  handle(ctx) {', '    const out: string[] = [];'];
const TAIL = ['    return { out, cid: ctx.cid };', '  },', '});', ''];
const source = (change: (n: number, line: string) => string = (_, l) => l): string =>
  [...HEAD, ...Array.from({ length: LINES - HEAD.length - TAIL.length + 1 }, (_, i) => i + HEAD.length + 1).map((n) => change(n, lineOf(n))), ...TAIL].join('\n');
const LONG = source();

let k: AdminKernel;
let page: Page;

beforeAll(async () => {
  expect(LONG.split('\n')).toHaveLength(LINES + 1);
  expect(LONG.split('\n')[119]).toMatch(/^ {4}out\.push\('line 120: .{200,}end_120'\);$/);
  k = await startAdmin({ services: { 'long.ts': LONG } });
  page = await openPage();
  // Signed in once, on the service's page, for every test (each can run alone).
  await page.goto(`${k.admin}/admin/#/services/long`);
  await submitLogin(page, ADMIN_PASSWORD);
  await page.getByRole('heading', { level: 1, name: 'long', exact: true }).waitFor();
}, 60_000);
afterAll(async () => {
  await closePage(page);
  await k?.close();
});

interface Box {
  left: number;
  top: number;
  right: number;
  bottom: number;
}
const centerY = (b: Box) => (b.top + b.bottom) / 2;
const inside = (b: Box, frame: Box) => b.left >= frame.left - 0.5 && b.right <= frame.right + 0.5 && b.top >= frame.top - 0.5 && b.bottom <= frame.bottom + 0.5;

/** Where the coloured layer draws line `line`'s character at `column` (both from 1 and 0), in the viewport. */
const drawnAt = (line: number, column: number): Promise<Box> =>
  page.evaluate(
    ([line, column]) => {
      const shown = document.querySelector('pre.highlight')!;
      const lines = (shown.textContent ?? '').split('\n');
      let offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column;
      const walker = document.createTreeWalker(shown, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const length = node.textContent!.length;
        if (offset < length) {
          const range = document.createRange();
          range.setStart(node, offset);
          range.setEnd(node, offset + 1);
          const r = range.getBoundingClientRect();
          return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
        }
        offset -= length;
      }
      throw new Error(`the highlight has no line ${line} column ${column}`);
    },
    [line, column] as const,
  );

/**
 * Where the textarea lays out line `line`'s character at `column`: its own box, border, padding,
 * line height and scroll offsets, and the width of one character as the coloured layer draws it.
 */
const typedAt = (line: number, column: number, charWidth: number): Promise<Box> =>
  page.evaluate(
    ([line, column, charWidth]) => {
      const text = document.querySelector<HTMLTextAreaElement>('#source')!;
      const r = text.getBoundingClientRect();
      const style = getComputedStyle(text);
      const lineHeight = parseFloat(style.lineHeight);
      const left = r.left + text.clientLeft + parseFloat(style.paddingLeft) + column * charWidth - text.scrollLeft;
      const top = r.top + text.clientTop + parseFloat(style.paddingTop) + (line - 1) * lineHeight - text.scrollTop;
      return { left, top, right: left + charWidth, bottom: top + lineHeight };
    },
    [line, column, charWidth] as const,
  );

/** The part of the textarea people can see: its box, cut by every ancestor that clips, and by the window. */
const frame = (): Promise<Box> =>
  page.evaluate(() => {
    const text = document.querySelector('#source')!;
    const r = text.getBoundingClientRect();
    const box = { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
    const cut = (c: { left: number; top: number; right: number; bottom: number }) => {
      box.left = Math.max(box.left, c.left);
      box.top = Math.max(box.top, c.top);
      box.right = Math.min(box.right, c.right);
      box.bottom = Math.min(box.bottom, c.bottom);
    };
    for (let e = text.parentElement; e; e = e.parentElement) {
      if (getComputedStyle(e).overflow === 'visible') continue;
      const c = e.getBoundingClientRect();
      // Inside its borders and scrollbars.
      cut({ left: c.left + e.clientLeft, top: c.top + e.clientTop, right: c.left + e.clientLeft + e.clientWidth, bottom: c.top + e.clientTop + e.clientHeight });
    }
    // The gutter stays beside the text: what it covers is not seen either.
    const gutter = document.querySelector('.editor .gutter')!.getBoundingClientRect();
    if (gutter.right > box.left && gutter.left <= box.left) box.left = gutter.right;
    cut({ left: 0, top: 0, right: innerWidth, bottom: innerHeight });
    return box;
  });

/** The gutter's number `n` as drawn. */
const numberAt = (n: number): Promise<Box> =>
  page
    .locator('.editor .gutter span')
    .nth(n - 1)
    .evaluate((s) => {
      const r = s.getBoundingClientRect();
      return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
    });

const value = () => page.locator('#source').inputValue();
const caret = () => page.locator('#source').evaluate((t: HTMLTextAreaElement) => t.selectionStart);
const offsetOf = (text: string, line: number, column: number) => text.split('\n').slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column;

/** One character's width as the coloured layer draws it: a long line's 200 characters, over 200. */
async function charWidth(): Promise<number> {
  return ((await drawnAt(10, 204)).left - (await drawnAt(10, 4)).left) / 200;
}

/** Wheels over the editor (down or up, then across) until the coloured layer shows line `line`'s column `column` inside the editor's frame. */
async function wheelUntilShown(line: number, column: number): Promise<void> {
  const f = await frame();
  await page.mouse.move((f.left + f.right) / 2, (f.top + f.bottom) / 2);
  for (let i = 0; i < 60; i++) {
    const [at, now] = [await drawnAt(line, column), await frame()];
    if (inside(at, now)) break;
    const dy = at.top < now.top ? -200 : at.bottom > now.bottom ? 200 : 0;
    await page.mouse.wheel(dy ? 0 : at.left < now.left ? -200 : 200, dy);
    await page.waitForTimeout(30);
  }
  expect(inside(await drawnAt(line, column), await frame()), `line ${line}, column ${column} never shown inside the editor's frame`).toBe(true);
}

/** Asserts that where the textarea has line `line`'s character at `column` the coloured layer draws it too. */
async function expectAligned(line: number, column: number): Promise<void> {
  const w = await charWidth();
  const drawn = await drawnAt(line, column);
  const typed = await typedAt(line, column, w);
  expect(Math.abs(drawn.left - typed.left), `line ${line} column ${column}: x drawn ${drawn.left}, typed ${typed.left}`).toBeLessThan(1.5);
  expect(Math.abs(centerY(drawn) - centerY(typed)), `line ${line} column ${column}: y drawn ${centerY(drawn)}, typed ${centerY(typed)}`).toBeLessThan(1.5);
}

describe('the service editor on a long file', () => {
  it('puts a click on a line scrolled into view, far down and far across, on that line', async () => {
    await step(page, 'editor-long-click', async () => {
      await page.reload();
      await page.locator('#source').waitFor();
      expect(await value()).toBe(LONG);
      // The frame is smaller than the file: it has to scroll.
      const f = await frame();
      expect(inside(await drawnAt(LINES, 0), f)).toBe(false);
      expect(f.bottom - f.top).toBeGreaterThan(150);

      // Scrolled near the end, then across to the end of line 120 (longer than 250 characters).
      const line = 120;
      const text = lineOf(line);
      const column = text.indexOf('end_120');
      expect(column).toBeGreaterThan(200);
      await wheelUntilShown(line, 4);
      await wheelUntilShown(line, column + 7);
      await expectAligned(line, column);
      await expectAligned(line - 3, 4);

      // The line number beside it is its own.
      expect(Math.abs(centerY(await numberAt(line)) - centerY(await drawnAt(line, column)))).toBeLessThan(1.5);
      expect(await page.locator('.editor .gutter span').nth(line - 1).textContent()).toBe(`${line}\n`);

      // A click on the first letter of `end_120` as drawn puts the caret before it, and typing goes there.
      const target = await drawnAt(line, column);
      await page.mouse.click(target.left + 1, centerY(target));
      expect(await caret()).toBe(offsetOf(LONG, line, column));
      await page.keyboard.type('@@');
      const typed = (await value()).split('\n');
      expect(typed[line - 1]).toBe(`${text.slice(0, column)}@@${text.slice(column)}`);
      expect(typed.filter((l) => l.includes('@@'))).toHaveLength(1);
      // The coloured layer shows the same text, still where the textarea has it.
      await expect.poll(() => page.locator('pre.highlight').evaluate((p) => p.textContent!.split('\n')[119])).toBe(typed[line - 1]);
      await expectAligned(line, column + 2);

      // Typing on past the end of the longest line keeps both layers together.
      await page.keyboard.press('End');
      await page.keyboard.type(' // and a comment that makes this line longer still, past where it ended');
      await page.waitForTimeout(50);
      const longer = (await value()).split('\n')[line - 1]!;
      await expectAligned(line, longer.length - 1);
      expect(inside(await drawnAt(line, longer.length - 1), await frame())).toBe(true);

      // A click on another visible line, at its start, lands there too.
      const other = await drawnAt(line + 3, 4);
      await wheelUntilShown(line + 3, 4);
      const again = await drawnAt(line + 3, 4);
      expect(again.top).toBeCloseTo(other.top, 0);
      await page.mouse.click(again.left + 1, centerY(again));
      expect(await caret()).toBe(offsetOf(await value(), line + 3, 4));
    });
  });

  it('offers completions under the caret on a line scrolled into view', async () => {
    await step(page, 'editor-long-completions', async () => {
      await page.locator('#source').fill(LONG);
      const line = 125;
      await wheelUntilShown(line, 4);
      const end = await drawnAt(line, lineOf(line).length - 1);
      await page.mouse.click(end.right + 2, centerY(end));
      await page.keyboard.press('End');
      await page.keyboard.press('Enter');
      await page.keyboard.type('    ctx.lo');
      const list = page.locator('#completions');
      await list.waitFor();
      expect(await list.locator('li .name').allTextContents()).toEqual(['log']);
      // Under the new line 126 (or above it, where there is no room below), starting where the prefix starts.
      const prefix = await drawnAt(line + 1, 8);
      const box = await list.evaluate((l) => {
        const r = l.getBoundingClientRect();
        return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
      });
      expect(Math.abs(box.left - prefix.left)).toBeLessThan(1.5);
      const lineHeight = await page.locator('#source').evaluate((t) => parseFloat(getComputedStyle(t).lineHeight));
      const lineTop = centerY(prefix) - lineHeight / 2;
      const below = Math.abs(box.top - (lineTop + lineHeight)) < 1.5;
      const above = Math.abs(box.bottom - lineTop) < 1.5;
      expect(below || above, `list at ${box.top}–${box.bottom}, line at ${lineTop}`).toBe(true);
      await page.keyboard.press('Escape');
      await expect.poll(() => list.isHidden()).toBe(true);
    });
  });

  it('moves the caret a page with Page Down and Page Up, and home with Ctrl+Home, the caret in view beside the gutter', async () => {
    await step(page, 'editor-long-keys', async () => {
      await page.locator('#source').fill(LONG);
      await page.keyboard.press('Control+End');
      await page.keyboard.press('Control+Home');
      expect(await caret()).toBe(0);
      // Line 1's first character shown, not under the line numbers, and the box at its top left.
      expect(inside(await drawnAt(1, 0), await frame())).toBe(true);
      const lineOfCaret = async () => (await value()).slice(0, await caret()).split('\n').length;
      await page.keyboard.press('PageDown');
      const down = await lineOfCaret();
      expect(down).toBeGreaterThan(10);
      expect(inside(await drawnAt(down, 0), await frame())).toBe(true);
      await page.keyboard.press('PageDown');
      expect(await lineOfCaret()).toBe(2 * down - 1);
      expect(inside(await drawnAt(2 * down - 1, 0), await frame())).toBe(true);
      await page.keyboard.press('PageUp');
      expect(await lineOfCaret()).toBe(down);
      expect(inside(await drawnAt(down, 0), await frame())).toBe(true);
      await expectAligned(down, 4);
    });
  });

  it("marks a compile error on line 100 beside that line, in view, with the caret there", async () => {
    await step(page, 'editor-long-check', async () => {
      // Scrolled to the top first: Check has to bring line 100 into view.
      const broken = source((n, l) => (n === 100 ? `    out.push('line 100' ;` : l));
      await page.locator('#source').fill(broken);
      await page.locator('#source').evaluate((t) => {
        t.scrollTop = 0;
        for (let e = t.parentElement; e; e = e.parentElement) e.scrollTop = 0;
      });
      await page.getByRole('button', { name: 'Check' }).click();
      await expect.poll(() => page.locator('#editor-errors').textContent()).toMatch(/^long\.ts:100:\d+: /);
      const bad = page.locator('.editor .gutter span.bad');
      expect(await bad.textContent()).toBe('100\n');
      // The caret is on line 100, and line 100 is where the mark is, in the editor's frame.
      const at = await caret();
      expect((await value()).slice(0, at).split('\n')).toHaveLength(100);
      await page.waitForTimeout(50);
      const mark = await bad.evaluate((s) => {
        const r = s.getBoundingClientRect();
        return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
      });
      const drawn = await drawnAt(100, 4);
      expect(Math.abs(centerY(mark) - centerY(drawn)), `mark at ${centerY(mark)}, line 100 at ${centerY(drawn)}`).toBeLessThan(1.5);
      const f = await frame();
      expect(inside(drawn, f), `line 100 (${JSON.stringify(drawn)}) outside the frame ${JSON.stringify(f)}`).toBe(true);
      expect(centerY(mark)).toBeGreaterThan(f.top);
      expect(centerY(mark)).toBeLessThan(f.bottom);
      await expectAligned(100, 4);
    });
  });
});
