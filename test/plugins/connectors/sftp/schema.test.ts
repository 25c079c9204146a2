import { describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../sdk/plugin/index.ts';
import { sftpEntrySchema, validateSftp } from '../../../../plugins/connectors/sftp/schema.ts';
import { parsePinnedKey } from '../../../../plugins/connectors/sftp/host-key.ts';
import { pathProblem, segmentsOf } from '../../../../plugins/connectors/sftp/paths.ts';
import { putArgs } from '../../../../plugins/connectors/sftp/host-calls.ts';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
const base = { name: 'partner', host: 'sftp.example', username: 'svc', password: 'x', host_key: KEY };

function issuesOf(entries: unknown[], secrets: Array<{ name: string }> = []): string[] {
  const parsed = entries.map((e) => sftpEntrySchema.parse(e));
  return validateSftp({ sftp_connection: parsed, secrets } as unknown as SvcConfig).map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('sftp_connection schema', () => {
  it('fills the documented defaults and describes every key', () => {
    expect(sftpEntrySchema.parse(base)).toMatchObject({ port: 22, root: '.', max_file_bytes: 64 * 1024 * 1024, pool_size: 4, idle_ms: 60_000, connect_timeout_ms: 10_000, operation_timeout_ms: 120_000, keepalive_ms: 15_000, reconnect: { min_ms: 500, max_ms: 30_000 }, ready_check: false });
    const json = sftpEntrySchema.toJSONSchema() as { properties: Record<string, { writeOnly?: boolean; description?: string }> };
    expect(json.properties.password!.writeOnly).toBe(true);
    expect(json.properties.passphrase!.writeOnly).toBe(true);
    for (const [key, prop] of Object.entries(json.properties)) expect(prop.description, key).toBeTruthy();
  });

  it('requires the host key, and refuses unknown keys and out-of-range numbers', () => {
    const { host_key: _, ...noKey } = base;
    expect(sftpEntrySchema.safeParse(noKey).success).toBe(false);
    expect(sftpEntrySchema.safeParse({ ...base, colour: 'red' }).success).toBe(false);
    expect(sftpEntrySchema.safeParse({ ...base, pool_size: 0 }).success).toBe(false);
  });

  it('checks credentials, secrets, duplicates and the host key text', () => {
    expect(issuesOf([base])).toEqual([]);
    expect(issuesOf([{ ...base, password: undefined, private_key_secret: 'k', passphrase_secret: 'p' }], [{ name: 'k' }, { name: 'p' }])).toEqual([]);
    expect(issuesOf([{ ...base, password: undefined }])).toEqual(['sftp_connection.0.password: give a password (password / password_secret) or a private key (private_key_secret / private_key_file)']);
    expect(issuesOf([{ ...base, private_key_secret: 'k', private_key_file: '/k' }], [{ name: 'k' }])).toEqual(['sftp_connection.0.private_key_file: give private_key_secret or private_key_file, not both']);
    expect(issuesOf([{ ...base, private_key_secret: 'nope' }])).toEqual(["sftp_connection.0.private_key_secret: no secret named 'nope' in secrets:"]);
    expect(issuesOf([{ ...base, passphrase: 'p' }])).toEqual(['sftp_connection.0.passphrase: a passphrase goes with a private key']);
    expect(issuesOf([base, base])).toEqual(["sftp_connection.1.name: duplicate connection name 'partner' (also sftp_connection[0])"]);
    expect(issuesOf([{ ...base, host_key: 'insecure_accept_any' }])[0]).toContain('svc always checks the server key');
    expect(issuesOf([{ ...base, host_key: 'SHA256:short' }])[0]).toContain('43 base64 characters');
    expect(issuesOf([{ ...base, host_key: 'ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl' }])).toEqual(['sftp_connection.0.host_key: the key text does not hold a ssh-rsa key']);
  });
});

describe('pinned keys', () => {
  it('take a key line (with a comment) or a fingerprint, as ssh-keygen -lf prints it', () => {
    const pinned = parsePinnedKey(`${KEY} root@host`);
    expect(pinned).toMatchObject({ type: 'ssh-ed25519', fingerprint: expect.stringMatching(/^SHA256:[A-Za-z0-9+/]{43}$/) });
    expect(parsePinnedKey((pinned as { fingerprint: string }).fingerprint)).toEqual({ type: undefined, fingerprint: (pinned as { fingerprint: string }).fingerprint });
  });
});

describe('paths', () => {
  it('refuse what would leave the root, before anything is sent', () => {
    for (const p of ['..', '../x', 'a/../../x', '/etc/passwd', 'a\0b', 'a\\..\\b', 'a\nb']) expect(pathProblem(p), p).toBeDefined();
    expect(segmentsOf('./a//b/./c.txt', 'path', { root: 'refused' })).toEqual(['a', 'b', 'c.txt']);
    expect(segmentsOf('', 'dir', { root: 'allowed' })).toEqual([]);
    expect(() => segmentsOf('.', 'path', { root: 'refused' })).toThrow(/must name a file/);
    expect(() => segmentsOf('../x', 'path', { root: 'refused' })).toThrow(expect.objectContaining({ code: 'BAD_REQUEST' }));
  });

  it('put arguments are checked on the host', () => {
    expect(putArgs.safeParse({ connection: 'p', path: 'a', content: 'AAH/', encoding: 'base64' }).success).toBe(true);
    expect(putArgs.safeParse({ connection: 'p', path: 'a', content: '**', encoding: 'base64' }).success).toBe(false);
    expect(putArgs.safeParse({ connection: 'p', path: 'a', content: 'x', encoding: 'utf8', mode: -1 }).success).toBe(false);
    expect(putArgs.safeParse({ connection: 'p', path: 'a', content: 'x', encoding: 'utf8', extra: 1 }).success).toBe(false);
  });
});
