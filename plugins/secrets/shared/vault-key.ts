import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { KEY_BYTES } from './cipher.ts';

export const KEY_ENV = 'SVC_VAULT_KEY';
export const KEY_FILE = 'vault.key';

/**
 * The vault's key: from SVC_VAULT_KEY (base64 of 32 bytes; for deployments that keep keys in
 * their secret manager), else from <data_dir>/vault.key, created owner-only on first use. Kept
 * apart from the database, so a copy of svc.db alone reveals no secret.
 */
export function loadVaultKey(dataDir: string, env: NodeJS.ProcessEnv): Buffer {
  const fromEnv = env[KEY_ENV];
  if (fromEnv !== undefined) {
    const key = Buffer.from(fromEnv, 'base64');
    if (key.length !== KEY_BYTES) throw new Error(`${KEY_ENV} must be the base64 of ${KEY_BYTES} bytes (openssl rand -base64 32)`);
    return key;
  }
  const file = join(dataDir, KEY_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, randomBytes(KEY_BYTES).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== KEY_BYTES) throw new Error(`${file} does not hold a vault key (base64 of ${KEY_BYTES} bytes)`);
  return key;
}
