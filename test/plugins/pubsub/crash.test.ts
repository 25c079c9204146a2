import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { basic } from './http/helpers.ts';

/**
 * Guaranteed Delivery across `kill -9`: a real server started with the CLI, GD publishes from
 * several clients, SIGKILL while they are in flight, a restart, a drain. Every publish the server
 * acknowledged must come back; nothing may come back twice.
 */

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'svc-pubsub-crash-'));
const configPath = join(dir, 'svc.yaml');
const PUB = basic('publisher', 'publisher-password-1');
const SUB = basic('reader', 'reader-password-1');

writeFileSync(
  configPath,
  `server:
  port: 0
  log_level: info
  data_dir: ${join(dir, 'data')}
  services_dir: ${join(dir, 'services')}
  sandbox: { workers: 1 }
security:
  - { name: sec.pub, type: basic_auth, username: publisher, password: publisher-password-1 }
  - { name: sec.sub, type: basic_auth, username: reader, password: reader-password-1 }
pubsub_topic:
  - { name: /crash/a }
  - { name: /crash/b }
pubsub_endpoint:
  - { name: ep.pub, security: sec.pub, pub: ['/crash/*'] }
  - { name: ep.sub, security: sec.sub, sub: ['/crash/*'] }
pubsub_subscription:
  - { endpoint: ep.sub, topics: [/crash/a, /crash/b] }
`,
);

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['bin/svc.js', 'start', '--config', configPath], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SVC_ADMIN_PORT: '0' } });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 30_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"address":"(http:\/\/[^"]+)"[^\n]*"svc listening"|"svc listening"[^\n]*"address":"(http:\/\/[^"]+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: (m[1] ?? m[2])! });
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
}

/** Resolves once the child has exited, also when it already had before this was called. */
function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

describe('GD messages survive kill -9', () => {
  it('every acknowledged publish comes back after a restart, once', async () => {
    const first = await startServer();
    const acknowledged = new Set<string>();
    let killed = false;

    const publisher = async (p: number) => {
      for (let i = 0; !killed; i++) {
        const data = `${p}-${i}`;
        try {
          const res = await fetch(`${first.url}/pubsub/topic/crash/${p % 2 ? 'a' : 'b'}`, {
            method: 'POST',
            headers: { authorization: PUB, 'content-type': 'application/json' },
            body: JSON.stringify({ data, priority: i % 10 }),
          });
          const body = (await res.json()) as { is_ok: boolean };
          if (res.status === 200 && body.is_ok) acknowledged.add(data);
        } catch {
          return; // the server is gone mid-request: this publish was never acknowledged
        }
      }
    };
    const publishers = Array.from({ length: 16 }, (_, p) => publisher(p));
    while (acknowledged.size < 400) await new Promise((r) => setTimeout(r, 5));
    killed = true;
    first.child.kill('SIGKILL');
    await Promise.all(publishers);
    await exited(first.child);

    const second = await startServer();
    const received: string[] = [];
    for (;;) {
      const res = await fetch(`${second.url}/pubsub/messages/get`, {
        method: 'POST',
        headers: { authorization: SUB, 'content-type': 'application/json' },
        body: JSON.stringify({ max_messages: 1000 }),
      });
      const body = (await res.json()) as { messages: Array<{ data: string }> };
      if (body.messages.length === 0) break;
      for (const m of body.messages) received.push(m.data);
    }
    second.child.kill('SIGTERM');
    await exited(second.child);

    const missing = [...acknowledged].filter((d) => !received.includes(d));
    expect(missing).toEqual([]);
    expect(new Set(received).size).toBe(received.length);
    expect(acknowledged.size).toBeGreaterThanOrEqual(400);
  }, 90_000);
});
