// The service editor: a textarea (the browser's own editing, undo and selection) over a <pre>
// that shows the same text coloured as TypeScript, line numbers beside both, and completions
// after `ctx.` from the SDK's own types (/admin/sdk-types.json, read from sdk/context.ts by
// the server). No editor library: no build step (docs/decisions), and what a service file needs.

import { el } from './form.js';

const KEYWORDS = new Set(
  'abstract as async await break case catch class const continue debugger default delete do else enum export extends false finally for from function get if implements import in instanceof interface let new null of private protected public readonly return satisfies set static super switch this throw true try type typeof undefined var void while with yield'.split(
    ' ',
  ),
);
// One token per match, in this order: comments, strings, template strings, numbers, words, anything else.
const TOKEN_RE = /(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?)|(`(?:\\[\s\S]|[^`\\])*`?)|(\b\d[\d_]*(?:\.\d+)?(?:e[+-]?\d+)?n?\b|\b0x[\da-f]+\b)|([A-Za-z_$][\w$]*)|([\s\S])/gi;

/** TypeScript source → [class, text] pairs; the classes are CSS classes of the highlight (`kw`, `str`…), '' for plain text. */
export function tokens(source) {
  const out = [];
  for (const m of source.matchAll(TOKEN_RE)) {
    const [text, comment, string, template, number, word] = m;
    const kind = comment ? 'com' : string || template ? 'str' : number ? 'num' : word ? (KEYWORDS.has(word) ? 'kw' : /^[A-Z]/.test(word) ? 'type' : '') : '';
    const last = out[out.length - 1];
    // Plain runs joined: fewer nodes to draw for each keystroke.
    if (last && last[0] === kind && kind === '') last[1] += text;
    else out.push([kind, text]);
  }
  return out;
}

let sdkTypes;
/** The SDK's completions, fetched once per page load. */
function loadSdkTypes() {
  sdkTypes ??= fetch('/admin/sdk-types.json')
    .then((r) => (r.ok ? r.json() : { ctx: [], types: {} }))
    .catch(() => ({ ctx: [], types: {} }));
  return sdkTypes;
}

/** The members to offer before the caret: after `ctx.` the Context's, after `ctx.log.` the Log's. */
export function completionsAt(before, types) {
  const m = /\bctx\.(?:(\w+)\.)?(\w*)$/.exec(before);
  if (!m || !types) return undefined;
  const [, parent, prefix] = m;
  let members = types.ctx;
  if (parent) {
    const of = types.ctx.find((c) => c.name === parent)?.of;
    members = of ? types.types[of] : undefined;
  }
  const found = members?.filter((c) => c.name.startsWith(prefix));
  return found?.length ? { prefix, members: found } : undefined;
}

/**
 * The editor's parts: `root` to place, `textarea` (its value is the source), `markLine(n)` to
 * mark a line in the gutter (undefined clears it), `goTo(line, column)` to put the cursor there.
 *
 * One box scrolls (`root`, down and across): in it the gutter, the coloured <pre> in the page's
 * flow, which makes the box as tall and as wide as the text, and the textarea over the <pre>,
 * filling it. The textarea is never smaller than its text, so it never scrolls itself: the
 * coloured text, the text that takes the clicks and keys, and the line numbers move together,
 * and a line's place is the same in all three.
 */
export function codeEditor(source, label) {
  const text = el('textarea', { id: 'source', class: 'code', spellcheck: 'false', autocomplete: 'off', autocapitalize: 'off', wrap: 'off', 'aria-label': label });
  text.value = source;
  const shown = el('pre', { class: 'highlight', 'aria-hidden': 'true' });
  const gutter = el('pre', { class: 'gutter', 'aria-hidden': 'true' });
  const list = el('ul', { class: 'completions', id: 'completions', role: 'listbox', hidden: true });
  const code = el('div', { class: 'code-area' }, shown, text, list);
  const root = el('div', { class: 'editor' }, gutter, code);
  let bad;

  let numbered = '';
  const number = () => {
    const lines = text.value.split('\n').length;
    // Redrawn only when the count or the marked line changes, not on each keystroke.
    if (numbered === `${lines}:${bad}`) return;
    numbered = `${lines}:${bad}`;
    gutter.replaceChildren(...Array.from({ length: lines }, (_, i) => el('span', { class: i + 1 === bad ? 'bad' : '', text: `${i + 1}\n` })));
    besideGutter();
  };
  // The gutter stays at the left as the text scrolls across: the caret the browser brings into
  // view must come out beside it, not under it (measured once on the page: before, it is 0 wide).
  const besideGutter = () => {
    if (gutter.offsetWidth) root.style.scrollPaddingLeft = `${gutter.offsetWidth + 8}px`;
  };
  text.addEventListener('focus', besideGutter);
  // A last newline gets a space after it, or the <pre> would be a line shorter than the textarea.
  const paint = () => shown.replaceChildren(...tokens(`${text.value} `).map(([kind, t]) => (kind ? el('span', { class: kind, text: t }) : document.createTextNode(t))));
  // Keystrokes faster than frames (a paste, a held key) colour the text once per frame; until
  // then the <pre> holds the same text uncoloured (never drawn so: the frame colours it first),
  // so the box is as large as the text before the browser brings the caret into view.
  let painting = false;
  const paintSoon = () => {
    shown.textContent = `${text.value} `;
    if (painting) return;
    painting = true;
    requestAnimationFrame(() => {
      painting = false;
      paint();
    });
  };
  // Should the textarea scroll after all (a paste: the browser brings the caret into view before
  // the <pre> has the new text), the box takes that scroll over, by as much: the textarea goes
  // back over the <pre>, and the caret stays where it was brought into view.
  const takeOver = (left, top) => {
    if (!left && !top) return;
    root.scrollLeft += left;
    root.scrollTop += top;
    text.scrollLeft = 0;
    text.scrollTop = 0;
  };
  text.addEventListener('scroll', () => takeOver(text.scrollLeft, text.scrollTop));

  /** Line (from 1) and column (from 0, tabs to their stops) in the monospace grid → px in the code area. */
  const place = (line, lineText) => {
    const style = getComputedStyle(text);
    const tab = parseInt(style.tabSize, 10) || 2;
    let column = 0;
    for (const c of lineText) column = c === '\t' ? column + tab - (column % tab) : column + 1;
    const lineHeight = parseFloat(style.lineHeight);
    return { top: parseFloat(style.paddingTop) + (line - 1) * lineHeight, left: parseFloat(style.paddingLeft) + column * measureChar(shown), lineHeight };
  };
  /** Scrolls the box (and the page, as little as it takes) to show that place, if it is out of view. */
  const reveal = ({ top, left, lineHeight }) => {
    const width = root.clientWidth - gutter.offsetWidth;
    if (top < root.scrollTop || top + lineHeight > root.scrollTop + root.clientHeight) root.scrollTop = Math.max(0, top - root.clientHeight / 3);
    if (left < root.scrollLeft || left + 2 * lineHeight > root.scrollLeft + width) root.scrollLeft = Math.max(0, left - width / 2);
    const box = root.getBoundingClientRect();
    const y = box.top + root.clientTop + top - root.scrollTop;
    if (y < 0 || y + lineHeight > innerHeight) window.scrollBy(0, y - innerHeight / 3);
  };

  // Completions: shown while the text before the caret ends in `ctx.` (and a prefix), chosen with
  // the arrows and Enter or Tab (or a click), closed by Escape or by typing something else.
  let open;
  let chosen = 0;
  const close = () => {
    open = undefined;
    list.hidden = true;
  };
  const accept = (i) => {
    const member = open?.members[i];
    if (!member) return;
    const at = text.selectionStart;
    const rest = member.name.slice(open.prefix.length);
    text.setRangeText(rest, at, at, 'end');
    close();
    text.dispatchEvent(new Event('input'));
    text.focus();
  };
  const drawList = () => {
    list.replaceChildren(
      ...open.members.map((m, i) => {
        const item = el('li', { role: 'option', class: i === chosen ? 'chosen' : '', 'aria-selected': String(i === chosen), title: plain(m.doc) }, el('span', { class: 'name', text: m.name }), el('span', { class: 'type', text: m.type }));
        item.addEventListener('mousedown', (e) => {
          e.preventDefault();
          accept(i);
        });
        return item;
      }),
    );
    // The chosen one in view (the list scrolls when it is taller than the room it has).
    if (!list.hidden) list.children[chosen]?.scrollIntoView({ block: 'nearest' });
  };
  const suggest = async () => {
    const at = text.selectionStart;
    const before = text.value.slice(0, at);
    const found = completionsAt(before, await loadSdkTypes());
    // The caret moved on while the types loaded.
    if (!found || text.selectionStart !== at) return close();
    open = found;
    chosen = 0;
    drawList();
    // Under the caret's line, from where the prefix starts: the code area scrolls with the text,
    // so its place in the text is its place in the box. The box cuts off what leaves it: above
    // the line when it fits there and not below, else on the roomier side, as tall as that room.
    const lines = before.split('\n');
    const last = lines[lines.length - 1];
    const { top, left, lineHeight } = place(lines.length, last.slice(0, last.length - found.prefix.length));
    list.style.left = `${left}px`;
    list.style.maxHeight = '';
    list.hidden = false;
    const height = list.offsetHeight;
    const below = root.scrollTop + root.clientHeight - (top + lineHeight);
    const above = top - root.scrollTop;
    const under = height <= below || (height > above && below >= above);
    if (height > (under ? below : above)) list.style.maxHeight = `${Math.max(3 * lineHeight, under ? below : above)}px`;
    list.style.top = `${under ? top + lineHeight : top - list.offsetHeight}px`;
  };

  text.addEventListener('input', () => {
    // Read before the <pre> grows: a textarea as large as its text again has nothing to scroll.
    const [left, top] = [text.scrollLeft, text.scrollTop];
    bad = undefined;
    number();
    paintSoon();
    takeOver(left, top);
    suggest();
  });
  // Page Up and Page Down: the textarea does not scroll, so the browser's own move a page does
  // nothing; the caret moves a box's height of lines (the selection with Shift), the box with it.
  const page = (e) => {
    const { lineHeight } = place(1, '');
    const step = Math.max(1, Math.floor(root.clientHeight / lineHeight) - 1) * (e.key === 'PageDown' ? 1 : -1);
    const backward = text.selectionDirection === 'backward';
    const head = backward ? text.selectionStart : text.selectionEnd;
    const lines = text.value.split('\n');
    const before = text.value.slice(0, head).split('\n');
    const line = Math.min(lines.length, Math.max(1, before.length + step));
    const to = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.min(before[before.length - 1].length, lines[line - 1].length);
    const anchor = backward ? text.selectionEnd : text.selectionStart;
    if (!e.shiftKey) text.setSelectionRange(to, to);
    else if (to < anchor) text.setSelectionRange(to, anchor, 'backward');
    else text.setSelectionRange(anchor, to, 'forward');
    root.scrollTop += step * lineHeight;
  };
  text.addEventListener('keydown', (e) => {
    if ((e.key === 'PageDown' || e.key === 'PageUp') && !e.altKey && !e.ctrlKey && !e.metaKey) {
      close();
      page(e);
      return e.preventDefault();
    }
    if (!open) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      chosen = (chosen + (e.key === 'ArrowDown' ? 1 : open.members.length - 1)) % open.members.length;
      drawList();
    } else if (e.key === 'Enter' || e.key === 'Tab') accept(chosen);
    else if (e.key === 'Escape') close();
    else return;
    e.preventDefault();
  });
  text.addEventListener('blur', close);
  text.addEventListener('click', close);
  number();
  paint();

  return {
    root,
    textarea: text,
    markLine(line) {
      bad = line;
      number();
    },
    goTo(line, column) {
      const lines = text.value.split('\n');
      const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column;
      text.focus({ preventScroll: true });
      text.setSelectionRange(offset, offset);
      reveal(place(line, (lines[line - 1] ?? '').slice(0, column)));
    },
  };
}

/** A doc comment as a tooltip shows it: plain text, its `code` without the backticks. */
const plain = (doc) => (doc ? doc.replaceAll('`', '') : undefined);

let charWidth;
/** The width of one character of the editor's monospace font, as the coloured <pre> draws it. */
function measureChar(shown) {
  if (charWidth) return charWidth;
  const probe = el('span', { text: 'x'.repeat(100) });
  probe.style.position = 'absolute';
  probe.style.visibility = 'hidden';
  shown.append(probe);
  const width = probe.getBoundingClientRect().width / 100;
  probe.remove();
  // Not yet on the page: nothing measured, nothing kept.
  if (width) charWidth = width;
  return width;
}
