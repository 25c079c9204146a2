// Forms generated from JSON Schema (the admin API's catalogue, made from the plugins' zod schemas):
// every field's `description` is its help text, so a plugin's new resource needs no UI code.
// No framework: plain DOM, built once per form; `read()` turns the inputs back into a value.

const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c) node.append(c);
  return node;
};
export { el };

/** A link, a page's heading, and a value shown as JSON (text as it is): the pages' small parts. */
export const link = (href, text, attrs = {}) => el('a', { href, ...attrs, text });
export const h1 = (text) => el('h1', { text });
/** A queued event's last error, `kind: message`; a service's exception is stored as `Error: its message`, so its kind is said once. */
export const errorText = ({ kind, message }) => (message.startsWith(`${kind}: `) ? message : `${kind}: ${message}`);
export const pre = (value) => el('pre', { class: 'json', text: typeof value === 'string' ? value : JSON.stringify(value, null, 2) });

/** A description as people read it: its `code` spans as code, the rest as text (never HTML). */
export function prose(text) {
  return String(text)
    .split('`')
    .map((part, i) => (i % 2 ? el('code', { text: part }) : document.createTextNode(part)));
}

/** The schema's alternatives (oneOf/anyOf), with `null` ones left out (optional fields). */
function alternatives(schema) {
  const alts = schema.oneOf ?? schema.anyOf;
  return alts ? alts.filter((s) => s.type !== 'null') : undefined;
}

/** A discriminated union: every alternative has the same property with a `const` (or one-value enum). */
function discriminatorOf(alts) {
  const first = alts[0]?.properties ?? {};
  for (const key of Object.keys(first)) {
    if (alts.every((a) => constOf(a.properties?.[key]) !== undefined)) return key;
  }
  return undefined;
}
function constOf(s) {
  if (!s) return undefined;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length === 1) return s.enum[0];
  return undefined;
}

const SECRET_NAMES = /pass(word)?|secret|api_?key|token|private/i;

/**
 * Builds the inputs of `schema` under `path`; returns { node, read, setErrors }.
 * `value` is the current value (an entry being edited) or undefined (a new one).
 */
export function field(schema, path, value, opts = {}) {
  const name = path.at(-1) ?? '';
  const id = 'f-' + path.join('.');
  const help = schema.description ? el('div', { class: 'help' }, prose(schema.description)) : undefined;
  const error = el('div', { class: 'field-error', 'data-path': path.join('.') });
  // A field's title (its schema's `title`) for people, with its key beside it as the YAML has it.
  const label = (extra) =>
    el('label', { for: id }, el('span', { class: 'name', text: String(schema.title ?? name) }), schema.title ? el('code', { class: 'key', text: ` ${name}` }) : undefined, opts.required ? el('span', { class: 'req', text: ' *' }) : undefined, extra);
  const alts = alternatives(schema);

  if (alts && alts.length === 1) return field({ description: schema.description, ...alts[0] }, path, value, opts);
  if (alts && alts.length > 1) {
    const key = discriminatorOf(alts);
    if (key) return unionField(schema, alts, key, path, value, opts);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;

  if (type === 'object' && schema.properties) {
    const required = new Set(schema.required ?? []);
    const parts = Object.entries(schema.properties).map(([k, s]) => [k, field(s, [...path, k], value?.[k], { required: required.has(k) && s.default === undefined, secretsWriteOnly: opts.secretsWriteOnly, refs: opts.refs, secretsSet: path.length ? undefined : opts.secretsSet })]);
    const node = el('fieldset', { class: 'object', 'data-path': path.join('.') }, path.length ? el('legend', { text: String(name) }) : undefined, help, parts.map(([, p]) => p.node), error);
    // Fields that apply only when a sibling has a value (`x-svc-when`: a format's settings, the
    // queue's): shown then, hidden and left out otherwise, as the sibling changes.
    const conditional = parts.filter(([k]) => schema.properties[k]?.['x-svc-when']);
    const applies = (k) => {
      const when = schema.properties[k]['x-svc-when'];
      const sibling = parts.find(([name]) => name === when.field)?.[1];
      let current;
      try {
        current = sibling?.read();
      } catch {
        current = undefined;
      }
      return current === when.equals || (current === undefined && schema.properties[when.field]?.default === when.equals);
    };
    const toggle = () => {
      for (const [k, p] of conditional) p.node.hidden = !applies(k);
    };
    if (conditional.length) {
      node.addEventListener('input', toggle);
      node.addEventListener('change', toggle);
      toggle();
    }
    return {
      node,
      read() {
        const out = {};
        for (const [k, p] of parts) {
          if (p.node.hidden) continue;
          const v = p.read();
          if (v !== undefined) out[k] = v;
        }
        return Object.keys(out).length || opts.required || !path.length ? out : undefined;
      },
    };
  }

  if (type === 'boolean') {
    const input = el('input', { type: 'checkbox', id, name: path.join('.') });
    input.checked = value ?? schema.default ?? false;
    const node = el('div', { class: 'field checkbox', 'data-path': path.join('.') }, el('label', { for: id }, input, ' ', el('span', { class: 'name', text: String(name) })), help, error);
    const initial = input.checked;
    return { node, read: () => (value === undefined && input.checked === initial && schema.default !== undefined ? undefined : input.checked) };
  }

  if (type === 'array' && isScalar(schema.items)) {
    // Lists of names or addresses: one per line.
    const input = el('textarea', { id, name: path.join('.'), rows: 3, placeholder: 'one per line' });
    input.value = Array.isArray(value) ? value.join('\n') : '';
    const node = el('div', { class: 'field', 'data-path': path.join('.') }, label(), input, help, error);
    const itemType = schema.items?.type;
    return {
      node,
      read() {
        const lines = input.value.split('\n').map((s) => s.trim()).filter(Boolean);
        if (!lines.length && value === undefined) return undefined;
        return itemType === 'integer' || itemType === 'number' ? lines.map(Number) : lines;
      },
    };
  }

  if (type === 'array' || (type === 'object' && !schema.properties)) {
    // Lists of objects and free-form maps: edited as JSON, checked by the server like everything else.
    const input = el('textarea', { id, name: path.join('.'), rows: 6, class: 'json' });
    input.value = value === undefined ? '' : JSON.stringify(value, null, 2);
    const node = el('div', { class: 'field', 'data-path': path.join('.') }, label(el('span', { class: 'hint', text: ' (JSON)' })), input, help, error);
    return {
      node,
      read() {
        const text = input.value.trim();
        if (!text) return undefined;
        try {
          return JSON.parse(text);
        } catch {
          throw Object.assign(new Error(`${path.join('.')}: not valid JSON`), { path });
        }
      },
    };
  }

  if (Array.isArray(schema.enum)) {
    const select = el('select', { id, name: path.join('.') }, opts.required ? undefined : el('option', { value: '', text: '' }), schema.enum.map((v) => el('option', { value: String(v), text: String(v) })));
    select.value = value !== undefined ? String(value) : schema.default !== undefined ? String(schema.default) : '';
    const node = el('div', { class: 'field', 'data-path': path.join('.') }, label(), select, help, error);
    const initial = select.value;
    return {
      node,
      read() {
        if (select.value === '') return undefined;
        if (value === undefined && schema.default !== undefined && select.value === initial) return undefined;
        const hit = schema.enum.find((v) => String(v) === select.value);
        return hit;
      },
    };
  }

  const numeric = type === 'integer' || type === 'number';
  const secret = !numeric && (schema.writeOnly || (opts.secretsWriteOnly && SECRET_NAMES.test(String(name))));
  const input = el('input', {
    id,
    name: path.join('.'),
    type: numeric ? 'number' : secret ? 'password' : 'text',
    step: type === 'integer' ? 1 : numeric ? 'any' : undefined,
    min: schema.minimum,
    max: schema.maximum,
    autocomplete: secret ? 'new-password' : 'off',
    placeholder: secret && value !== undefined ? '(unchanged)' : schema.default !== undefined ? String(schema.default) : '',
  });
  if (!secret && value !== undefined && value !== null) input.value = String(value);
  // A write-only field that holds a value says so (its value is never sent back).
  const isSet = secret && opts.secretsSet?.includes(String(name));
  if (isSet) input.placeholder = '(set: leave empty to keep it)';
  const refNote = referenceNote(schema, input, opts.refs);
  const node = el('div', { class: 'field', 'data-path': path.join('.') }, label(isSet ? el('span', { class: 'badge', text: ' set' }) : undefined), input, refNote, help, error);
  return {
    node,
    read() {
      const text = input.value;
      if (text === '') return undefined;
      return numeric ? Number(text) : text;
    },
  };
}

/**
 * A field that names another resource (`scopedRef.to` in its schema: config sections, or
 * `services`): the names that exist are offered as it is typed, and a name that exists nowhere
 * is flagged at once (the server would accept a channel naming a service not deployed yet: it
 * answers 500 until one is). `refs`: the names by what they are, read when the page opened.
 */
function referenceNote(schema, input, refs) {
  const to = schema.scopedRef?.to;
  if (!to || !refs) return undefined;
  const keep = schema.scopedRef.keep ?? [];
  const names = [...new Set(to.flatMap((t) => refs.get(t) ?? []))].sort();
  const listId = `${input.id}-choices`;
  input.setAttribute('list', listId);
  const choices = el('datalist', { id: listId }, [...keep, ...names].map((n) => el('option', { value: n })));
  const warning = el('div', { class: 'field-warning', 'data-path': input.name });
  const what = to.map((t) => (t === 'services' ? 'deployed service' : t)).join(' or ');
  const check = () => {
    const v = input.value.trim();
    warning.textContent = v && !keep.includes(v) && !names.includes(v) ? `No ${what} is named '${v}'${to.includes('services') ? ': calls answer 500 until one is deployed' : ''}.` : '';
  };
  input.addEventListener('input', check);
  check();
  return el('div', {}, choices, warning);
}

function isScalar(items) {
  return items && ['string', 'integer', 'number'].includes(items.type) && !items.properties;
}

/** A union told apart by one property (security definitions by `type`): a select, then that branch's fields. */
function unionField(schema, alts, key, path, value, opts) {
  const id = 'f-' + [...path, key].join('.');
  const choices = alts.map((a) => String(constOf(a.properties[key])));
  const select = el('select', { id, name: [...path, key].join('.') }, choices.map((c) => el('option', { value: c, text: c })));
  const current = value?.[key] !== undefined ? String(value[key]) : choices[0];
  select.value = current;
  const holder = el('div', { class: 'branch' });
  let branch;
  const render = () => {
    const alt = alts[choices.indexOf(select.value)];
    const props = { ...alt.properties };
    delete props[key];
    const sub = { ...alt, properties: props, required: (alt.required ?? []).filter((r) => r !== key) };
    branch = field(sub, path, value?.[key] === select.value ? value : undefined, { ...opts, required: true });
    holder.replaceChildren(branch.node);
  };
  render();
  select.addEventListener('change', render);
  const node = el(
    'div',
    { class: 'union', 'data-path': path.join('.') },
    el('div', { class: 'field' }, el('label', { for: id }, el('span', { class: 'name', text: key }), el('span', { class: 'req', text: ' *' })), select, schema.description ? el('div', { class: 'help' }, prose(schema.description)) : undefined),
    holder,
  );
  return { node, read: () => ({ [key]: select.value, ...branch.read() }) };
}

/** Shows the server's issues next to their fields (by path); those with no field go to `fallback`. */
export function showIssues(form, issues, fallback) {
  for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
  for (const e of form.querySelectorAll('.invalid')) e.classList.remove('invalid');
  const unplaced = [];
  for (const issue of issues) {
    const path = issue.field ?? issue.path ?? [];
    let target;
    for (let n = path.length; n > 0 && !target; n--) target = form.querySelector(`.field-error[data-path="${CSS.escape(path.slice(0, n).join('.'))}"]`);
    if (target) {
      target.textContent = issue.message;
      target.parentElement?.classList.add('invalid');
    } else unplaced.push(issue);
  }
  fallback.replaceChildren(...unplaced.map((i) => el('div', { class: 'issue', text: ((i.field ?? i.path)?.length ? (i.field ?? i.path).join('.') + ': ' : '') + i.message })));
}
