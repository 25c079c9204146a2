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
 */
export function codeEditor(source, label) {
  const text = el('textarea', { id: 'source', class: 'code', spellcheck: 'false', autocomplete: 'off', autocapitalize: 'off', rows: Math.min(40, Math.max(12, source.split('\n').length + 2)), 'aria-label': label });
  text.value = source;
  const shown = el('pre', { class: 'highlight', 'aria-hidden': 'true' });
  const gutter = el('pre', { class: 'gutter', 'aria-hidden': 'true' });
  const list = el('ul', { class: 'completions', id: 'completions', role: 'listbox', hidden: true });
  const code = el('div', { class: 'code-area' }, shown, text, list);
  let bad;

  const number = () => {
    const lines = text.value.split('\n').length;
    gutter.replaceChildren(...Array.from({ length: lines }, (_, i) => el('span', { class: i + 1 === bad ? 'bad' : '', text: `${i + 1}\n` })));
  };
  const paint = () => {
    // A last newline gets a space after it, or the <pre> would be a line shorter than the textarea.
    shown.replaceChildren(...tokens(`${text.value} `).map(([kind, t]) => (kind ? el('span', { class: kind, text: t }) : document.createTextNode(t))));
  };
  // Keystrokes faster than frames (a paste, a held key) colour the text once per frame.
  let painting = false;
  const paintSoon = () => {
    if (painting) return;
    painting = true;
    requestAnimationFrame(() => {
      painting = false;
      paint();
      follow();
    });
  };
  const follow = () => {
    shown.scrollTop = gutter.scrollTop = text.scrollTop;
    shown.scrollLeft = text.scrollLeft;
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
        const item = el('li', { role: 'option', class: i === chosen ? 'chosen' : '', 'aria-selected': String(i === chosen), title: m.doc }, el('span', { class: 'name', text: m.name }), el('span', { class: 'type', text: m.type }));
        item.addEventListener('mousedown', (e) => {
          e.preventDefault();
          accept(i);
        });
        return item;
      }),
    );
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
    // Below the caret: its line and column in the monospace grid, less the scroll.
    const lines = before.split('\n');
    const style = getComputedStyle(text);
    const lineHeight = parseFloat(style.lineHeight);
    const charWidth = measureChar(style);
    list.style.top = `${parseFloat(style.paddingTop) + lines.length * lineHeight - text.scrollTop}px`;
    list.style.left = `${parseFloat(style.paddingLeft) + (lines[lines.length - 1].length - found.prefix.length) * charWidth - text.scrollLeft}px`;
    list.hidden = false;
  };

  text.addEventListener('input', () => {
    bad = undefined;
    number();
    paintSoon();
    follow();
    suggest();
  });
  text.addEventListener('keydown', (e) => {
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
  text.addEventListener('scroll', follow);
  number();
  paint();

  return {
    root: el('div', { class: 'editor' }, gutter, code),
    textarea: text,
    markLine(line) {
      bad = line;
      number();
    },
    goTo(line, column) {
      const offset = text.value.split('\n').slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + column;
      text.focus();
      text.setSelectionRange(offset, offset);
    },
  };
}

let charWidth;
/** The width of one character of the editor's monospace font. */
function measureChar(style) {
  if (charWidth) return charWidth;
  const probe = el('span', { text: 'x'.repeat(100) });
  probe.style.font = style.font;
  probe.style.position = 'absolute';
  probe.style.visibility = 'hidden';
  document.body.append(probe);
  charWidth = probe.getBoundingClientRect().width / 100;
  probe.remove();
  return charWidth;
}
