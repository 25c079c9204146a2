/**
 * Node-RED running the trivial flow of the channel rows: http in (GET /hello) → function node
 * returning { hello: 'world' } → http response. Node-RED is not a project dependency: it is
 * installed on demand into ~/.cache/svc-bench/node-red.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachedPackage, freePort, spawnLogged, versionOf, type Running } from '../lib.ts';

export function nodeRed(): { dir: string; version: string } {
  const dir = cachedPackage('node-red', 'node-red', 'node-red@4.1');
  return { dir, version: versionOf(dir) };
}

const FLOW = [
  { id: 'bench', type: 'tab', label: 'bench' },
  { id: 'in', type: 'http in', z: 'bench', url: '/hello', method: 'get', upload: false, swaggerDoc: '', wires: [['fn']] },
  { id: 'fn', type: 'function', z: 'bench', func: "msg.payload = { hello: 'world' };\nreturn msg;", outputs: 1, noerr: 0, initialize: '', finalize: '', libs: [], wires: [['out']] },
  { id: 'out', type: 'http response', z: 'bench', statusCode: '', headers: {}, wires: [] },
];

/** No editor or admin API (httpAdminRoot: false), nothing asked or sent home, log level warn. */
const SETTINGS = `module.exports = {
  uiHost: '127.0.0.1',
  flowFile: 'flows.json',
  httpAdminRoot: false,
  httpNodeRoot: '/',
  credentialSecret: false,
  diagnostics: { enabled: false, ui: false },
  telemetry: { enabled: false },
  externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
  logging: { console: { level: 'warn', metrics: false, audit: false } },
};
`;

/** Starts Node-RED on a free port with a user dir in a temp dir; ready once GET /hello answers. */
export async function startNodeRed(dir: string): Promise<Running> {
  const userDir = mkdtempSync(join(tmpdir(), 'svc-bench-node-red-'));
  writeFileSync(join(userDir, 'flows.json'), JSON.stringify(FLOW));
  writeFileSync(join(userDir, 'settings.js'), SETTINGS);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  try {
    const p = await spawnLogged([join(dir, 'red.js'), '-u', userDir, '-s', join(userDir, 'settings.js'), '-p', String(port), 'flows.json'], { cwd: userDir, log: join(userDir, 'node-red.log'), probe: `${url}/hello` });
    return { url, pid: p.pid, stop: () => p.stop().finally(() => rmSync(userDir, { recursive: true, force: true })) };
  } catch (err) {
    rmSync(userDir, { recursive: true, force: true });
    throw err;
  }
}
