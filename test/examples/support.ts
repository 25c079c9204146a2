import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

/** examples/plugins/<name>: each example is a package of its own (svc-plugin-<name>). */
export function exampleDir(name: string): string {
  return fileURLToPath(new URL(`../../examples/plugins/${name}`, import.meta.url));
}

export const REPO = fileURLToPath(new URL('../../', import.meta.url));

/**
 * A user's project directory laid out as `npm install ../svc-plugin-<name>` leaves it:
 * node_modules/svc-plugin-<name> a symlink to the plugin's folder, node_modules/svc one to
 * this checkout. Returns the directory (config/ and services/ are made by the callers).
 */
export function projectWithPackages(names: string[], dir = mkdtempSync(join(tmpdir(), 'svc-example-'))): string {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  symlinkSync(REPO, join(dir, 'node_modules', 'svc'), 'dir');
  for (const name of names) symlinkSync(exampleDir(name), join(dir, 'node_modules', `svc-plugin-${name}`), 'dir');
  return dir;
}

/** A channel 401: the catalogue body, its CID equal to the X-Svc-CID header, and the Bearer challenge. */
export function expectUnauthorized(res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, challenge: string): void {
  expect(res.statusCode).toBe(401);
  const body = res.json() as { cid: string };
  expect(body).toEqual({ result: 'Error', cid: res.headers['x-svc-cid'], details: 'Unauthorized' });
  expect(body.cid).toMatch(/^[0-9a-f]{22}$/);
  expect(res.headers['www-authenticate']).toBe(challenge);
}
