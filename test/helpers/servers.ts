import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

/**
 * The mail and file servers of the connectors' suites (scripts/test-servers.sh): Dovecot
 * (IMAP 10143 with STARTTLS, LMTP 10024), the SMTP relay (2525, delivers to Dovecot) and
 * OpenSSH's sshd (2222, SFTP). `testServers()` starts whichever is down, once per process.
 * These suites always run: a server that cannot be started fails them, it does not skip them.
 */
export const SERVERS_DIR = process.env.SVC_TEST_SERVERS ?? '/tmp/svc-test-servers';

export const IMAP = { host: '127.0.0.1', port: 10143, password: 'svc-test' } as const;
export const SMTP = { host: '127.0.0.1', port: 2525, password: 'svc-test' } as const;
export const SFTP = { host: '127.0.0.1', port: 2222, username: 'svcsftp', password: 'svc-test' } as const;

function open(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => done(true));
  });
}

let started: Promise<void> | undefined;

/** Makes sure every test server answers; throws, saying where to look, when one cannot be started. */
export function testServers(): Promise<void> {
  started ??= (async () => {
    const up = await Promise.all([10143, 10024, 2525, 2222].map(open));
    if (up.every(Boolean)) return;
    try {
      execFileSync('bash', [join(import.meta.dirname, '../../scripts/test-servers.sh')], { stdio: 'pipe', timeout: 180_000, env: { ...process.env, SVC_TEST_SERVERS: SERVERS_DIR } });
    } catch (err) {
      const e = err as { stdout?: Buffer; stderr?: Buffer };
      throw new Error(`scripts/test-servers.sh could not start the test servers: ${String(e.stdout ?? '')}${String(e.stderr ?? '')}`);
    }
  })();
  return started;
}

/** A mailbox user no other test (or run) uses: `t-3fa2…@svc.test`; its password is IMAP.password. */
export function uniqueMailUser(prefix = 't'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}@svc.test`;
}

/** The sshd's host key as `ssh-ed25519 AAAA…` (what an sftp_connection pins), and the client's key pair. */
export function sftpKeys(): { hostKey: string; privateKey: string; publicKey: string } {
  const line = (file: string) => readFileSync(join(SERVERS_DIR, file), 'utf8').trim();
  const [type, key] = line('ssh_host_ed25519_key.pub').split(' ');
  return { hostKey: `${type} ${key}`, privateKey: line('client_key'), publicKey: line('client_key.pub') };
}

/** The sftp user's home directory. */
export function sftpHome(): string {
  return join(SERVERS_DIR, 'sftp-home');
}

/**
 * A fresh folder in the sftp user's home, owned by that user (so SFTP may write, rename and
 * delete in it): its path relative to the home (what an SFTP client names) and on this disk.
 */
export function sftpFolder(prefix = 't'): { remote: string; local: string } {
  const name = `${prefix}-${randomBytes(5).toString('hex')}`;
  const local = join(sftpHome(), name);
  mkdirSync(local, { mode: 0o777 });
  const [uid, gid] = execFileSync('id', ['-u', SFTP.username]).toString().trim().split('\n').concat(execFileSync('id', ['-g', SFTP.username]).toString().trim()).map(Number);
  chownSync(local, uid!, gid!);
  return { remote: name, local };
}
