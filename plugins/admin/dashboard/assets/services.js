// The Dashboard's service pages: the list with its upload form, and each service's page with its
// editor (editor.js), its dead letters and their replay against a version, and its deploy history.
// Each returns the nodes of its page; app.js draws them. `ui`: what app.js knows of the session
// (ops, me, canChange) and its navigation (navigate, failed).
import { api, ApiError } from './client.js';
import { codeEditor } from './editor.js';
import { lineDiff } from './diff.js';
import { el, errorText, h1, link, pre, showIssues } from './form.js';

/** A service's page: its source (an editor for those who may change it), its dead letters, its deploy history. */
export async function servicePage(name, ui) {
  const { ops } = ui;
  const [src, history, dead] = await Promise.all([
    api.op('services.source', { name }),
    ops.has('services.history') ? api.op('services.history', { name }).catch((err) => (err instanceof ApiError && err.status === 404 ? undefined : Promise.reject(err))) : undefined,
    ops.has('queue.list') ? api.op('queue.list', { service: name, state: 'dead', limit: 1000 }).catch(() => []) : [],
  ]);
  const editor = ui.canChange && ops.has('services.upload') ? serviceEditor(name, src, ui) : pre(src.source ?? src);
  return [el('p', {}, link('#/services', '← Services')), h1(name), editor, deadLetterSection(name, dead, history, ui), historySection(name, history, ui)];
}

/** The services: each one's file, state and channels, and an upload form. */
export async function servicesList(ui) {
  const { ops, navigate, failed } = ui;
  const list = await api.op('services.list', {});
  const file = el('input', { id: 'upload-file', name: 'file', placeholder: 'name.ts' });
  const source = el('textarea', { id: 'upload-source', name: 'source', rows: 12, class: 'json', placeholder: "import { service } from 'svc/sdk';" });
  const slot = (label, input, path) => el('div', { class: 'field' }, el('label', { for: input.id }, el('span', { class: 'name', text: label })), input, el('div', { class: 'field-error', 'data-path': path }));
  const issues = el('div', { class: 'issues' });
  const upload = el('form', { class: 'upload' }, el('h2', { text: 'Upload (hot deploy)' }), slot('file', file, 'file'), slot('source', source, 'source'), issues, el('button', { type: 'submit', text: 'Upload' }));
  upload.addEventListener('submit', async (e) => {
    e.preventDefault();
    showIssues(upload, [], issues);
    try {
      const r = await api.op('services.upload', { file: file.value, source: source.value });
      navigate('#/services', `${r.file} deployed: ${r.name} serves this version`);
    } catch (err) {
      // A version that did not compile is refused whole: its position shows at the source.
      // Issues of an earlier attempt go either way; a refusal without any (a name conflict) is in the flash.
      showIssues(upload, err instanceof ApiError ? err.issues : [], issues);
      failed(err);
    }
  });
  const STATES = { serving: 'serving', serving_previous: 'serving the previous version', not_deployed: 'not deployed', quarantined: 'quarantined' };
  const stateCell = (s) =>
    el(
      'td',
      { class: s.state === 'serving' ? 'state' : 'state bad', 'data-state': s.state },
      STATES[s.state] ?? s.state,
      s.last_good_from ? el('div', { class: 'help', text: `the last good copy, saved ${s.last_good_from}` }) : '',
      s.error ? el('pre', { class: 'field-error', text: s.error }) : '',
      s.quarantine ? el('div', { class: 'field-error', text: s.quarantine }) : '',
    );
  const row = (s) => el('tr', { 'data-name': s.name }, el('td', {}, link(`#/services/${encodeURIComponent(s.name)}`, s.name)), el('td', { text: s.file ?? '' }), stateCell(s), el('td', { text: s.channels.join(', ') }));
  return [h1('Services'), el('table', { class: 'list', id: 'services' }, el('tr', {}, ['name', 'file', 'state', 'channels'].map((t) => el('th', { text: t }))), list.map(row)), ops.has('services.upload') ? upload : ''];
}

/**
 * A service's source, editable (editor.js: coloured, numbered, completions after `ctx.`): Check
 * (compiled on the server, nothing deployed: services.check) marks the first error at its line and
 * puts the cursor there, and Deploy uploads it (services.upload: compiled again, deployed, written;
 * a version that does not compile changes nothing), with its tests run first when it has some and
 * the gate is ticked. The file as it is on disk is what opens.
 */
function serviceEditor(name, src, { ops, me, navigate, flash, failed }) {
  const editor = codeEditor(src.source, `Source of ${src.file}`);
  const text = editor.textarea;
  const errors = el('div', { id: 'editor-errors', class: 'field-error' });
  const mark = (list) => {
    const first = list.find((e) => e.position)?.position;
    editor.markLine(first?.line);
    errors.replaceChildren(...list.map((e) => el('div', { text: e.message })));
    // The cursor at the error: line and column (esbuild's column counts from 0).
    if (first) editor.goTo(first.line, first.column);
  };
  const check = el('button', { type: 'button', id: 'check', text: 'Check' });
  check.addEventListener('click', async () => {
    try {
      const r = await api.op('services.check', { file: src.file, source: text.value });
      mark(r.errors);
      if (r.ok) flash(`${src.file} compiles: Deploy puts it in service`);
    } catch (err) {
      failed(err);
    }
  });
  // The service's own tests (services.test: `svc test` in a process of its own), for platform administrators.
  const testOut = el('pre', { class: 'json test-output', id: 'test-output' });
  const runTests = ops.has('services.test') && !name.includes('/') ? el('button', { type: 'button', id: 'run-tests', class: 'link', text: 'Run its tests' }) : '';
  if (runTests)
    runTests.addEventListener('click', async () => {
      runTests.disabled = true;
      testOut.textContent = 'running…';
      try {
        const r = await api.op('services.test', { name });
        testOut.className = `json test-output ${r.passed ? 'passed' : 'failed'}`;
        testOut.textContent = r.output;
      } catch (err) {
        testOut.textContent = '';
        failed(err);
      } finally {
        runTests.disabled = false;
      }
    });
  // The test gate (services.upload's `test`): a platform service with a test file deploys only if its tests pass against this version.
  const gate = runTests && src.test_file ? el('input', { type: 'checkbox', id: 'test-gate', checked: true }) : undefined;
  const deploy = el('button', { type: 'button', id: 'deploy', text: 'Deploy' });
  deploy.addEventListener('click', async () => {
    const tested = gate?.checked === true;
    deploy.disabled = true;
    if (tested) testOut.textContent = `running ${src.test_file} against this version…`;
    try {
      const tenant = name.includes('/') ? name.slice(0, name.indexOf('/')) : undefined;
      const r = await api.op('services.upload', { file: src.file, source: text.value, ...(tenant && !me?.tenant ? { tenant } : {}), ...(tested ? { test: true } : {}) });
      navigate(`#/services/${encodeURIComponent(name)}`, `${src.file} deployed: ${name} serves this version${r.tests ? ` (its tests: ${r.tests.summary})` : ''}`);
    } catch (err) {
      testOut.textContent = '';
      const compile = err instanceof ApiError ? err.issues.filter((i) => i.path[0] === 'source') : [];
      // The refusal's issues carry each error's position, as services.check's do (none: an earlier mark goes).
      mark(compile);
      // Failing tests: what they printed, as Run its tests shows it.
      const tests = err instanceof ApiError ? err.issues.find((i) => i.path[0] === 'test') : undefined;
      if (tests) {
        testOut.className = 'json test-output failed';
        testOut.textContent = tests.message;
      }
      failed(err);
    } finally {
      deploy.disabled = false;
    }
  });
  const gateLabel = gate ? el('label', { class: 'gate', for: 'test-gate' }, gate, ` only if ${src.test_file} passes`) : '';
  return el('section', { id: 'editor' }, editor.root, errors, el('div', { class: 'toolbar' }, check, deploy, gateLabel, runTests, el('span', { class: 'help', text: src.file })), testOut);
}

/**
 * The service's dead letters (queue.list by service) and their replay against a version chosen
 * from its history (queue.replay's `version`: refused unless that version's source serves). A
 * version that does not serve is rolled back to first, after asking.
 */
function deadLetterSection(name, dead, history, { ops, canChange, navigate, failed }) {
  if (!dead.length) return '';
  const versions = history?.versions ?? [];
  const row = (e) =>
    el('tr', { 'data-id': String(e.id) }, el('td', { text: String(e.id) }), el('td', { text: e.channel ?? '(background)' }), el('td', { text: String(e.attempts) }), el('td', { text: e.lastError ? errorText(e.lastError) : '' }));
  const parts = [el('h2', { text: `Dead letters (${dead.length})` }), el('table', { class: 'list', id: 'dead-letters' }, el('tr', {}, ['id', 'channel', 'attempts', 'last error'].map((t) => el('th', { text: t }))), dead.map(row))];
  if (canChange && ops.has('queue.replay') && versions.length) {
    const choose = el('select', { id: 'replay-version' }, versions.map((v) => el('option', { value: String(v.version), text: `version ${v.version}${v.version === history.serving ? ' (serving)' : ''}`, selected: v.version === history.serving })));
    const replay = el('button', { type: 'button', id: 'replay-dead', text: `Replay ${dead.length === 1 ? 'it' : `all ${dead.length}`}` });
    replay.addEventListener('click', async () => {
      const version = Number(choose.value);
      try {
        const serves = versions.find((v) => v.version === history.serving);
        const same = versions.find((v) => v.version === version)?.hash === serves?.hash;
        if (!same) {
          if (!confirm(`Version ${version} of ${name} does not serve. Roll back to it, then replay the dead letters against it?`)) return;
          await api.op('services.rollback', { name, version });
        }
        const r = await api.op('queue.replay', { all: true, service: name, version });
        navigate(`#/services/${encodeURIComponent(name)}`, `${r.replayed} dead letter${r.replayed === 1 ? '' : 's'} of ${name} replayed against version ${version}`);
      } catch (err) {
        failed(err);
      }
    });
    parts.push(el('div', { class: 'toolbar' }, replay, el('span', { text: 'against' }), choose));
  }
  return el('section', { id: 'dead' }, parts);
}

/**
 * A service's deploy history (services.history): its versions, newest first, the changes between
 * any two (services.version, diffed here line by line), and a rollback to an earlier one.
 */
function historySection(name, history, { ops, canChange, navigate, failed }) {
  if (!ops.has('services.history')) return '';
  if (!history) return el('section', { id: 'history' }, el('h2', { text: 'Deploy history' }), el('p', { class: 'help', text: 'No deployed version is recorded yet.' }));
  const { versions } = history;
  const rollback = (v) => {
    if (!canChange || !ops.has('services.rollback')) return '';
    const b = el('button', { type: 'button', text: `Roll back to ${v.version}` });
    b.addEventListener('click', async () => {
      if (!confirm(`Deploy version ${v.version} of ${name} again (from ${v.deployed_at})?`)) return;
      try {
        const r = await api.op('services.rollback', { name, version: v.version });
        navigate(`#/services/${encodeURIComponent(name)}`, `${name}: version ${v.version} deployed again, now version ${r.version}`);
      } catch (err) {
        failed(err);
      }
    });
    return b;
  };
  const row = (v) =>
    el(
      'tr',
      { 'data-version': String(v.version) },
      el('td', { text: String(v.version) }),
      el('td', { text: v.deployed_at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC') }),
      el('td', { text: v.origin + (v.actor ? ` by ${v.actor}` : '') }),
      el('td', { text: v.node }),
      el('td', { class: 'mono', text: v.hash.slice(0, 12), title: v.hash }),
      el('td', {}, v.version === history.serving ? el('span', { class: 'state', text: 'serving' }) : rollback(v)),
    );
  const choose = (id, selected) => el('select', { id }, versions.map((v) => el('option', { value: String(v.version), text: `version ${v.version}`, selected: v.version === selected })));
  const from = choose('diff-from', versions[1]?.version ?? versions[0].version);
  const to = choose('diff-to', versions[0].version);
  const out = el('pre', { class: 'json diff', id: 'diff' });
  const compare = el('button', { type: 'button', text: 'Compare' });
  compare.addEventListener('click', async () => {
    try {
      const [a, b] = await Promise.all([api.op('services.version', { name, version: Number(from.value) }), api.op('services.version', { name, version: Number(to.value) })]);
      const lines = lineDiff(a.source, b.source);
      const removed = lines.filter(([k]) => k === '-').length;
      const added = lines.filter(([k]) => k === '+').length;
      const changed = removed + added;
      const count = (n, what) => `${n} line${n === 1 ? '' : 's'} ${what}`;
      out.replaceChildren(
        el('div', { class: 'help', text: changed ? `${[removed ? count(removed, 'removed') : '', added ? count(added, 'added') : ''].filter(Boolean).join(', ')} from version ${a.version} to ${b.version}` : `versions ${a.version} and ${b.version} are the same text` }),
        ...lines.map(([kind, line]) => el('span', { class: kind === '+' ? 'add' : kind === '-' ? 'del' : 'same', text: `${kind} ${line}\n` })),
      );
    } catch (err) {
      failed(err);
    }
  });
  return el(
    'section',
    { id: 'history' },
    el('h2', { text: 'Deploy history' }),
    el('table', { class: 'list', id: 'versions' }, el('tr', {}, ['version', 'deployed', 'from', 'node', 'content', ''].map((t) => el('th', { text: t }))), versions.map(row)),
    versions.length > 1 ? el('div', { class: 'toolbar' }, el('span', { text: 'Changes from' }), from, el('span', { text: 'to' }), to, compare) : '',
    out,
  );
}
