import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { SvcConfig } from '../../../../kernel/config/schema.ts';
import type { CliEnv } from '../../../../kernel/plugin.ts';
import { SqliteStore } from '../../../../kernel/store/sqlite.ts';
import { secdefCommand, type SecdefSpec, type SetSecretArgs } from '../../../../plugins/security/shared/secdef-cli.ts';
import { passwordProblem } from '../../../../plugins/security/shared/secret-rules.ts';
import { secretRows } from '../../../../plugins/security/shared/secret-store.ts';
import { verifySecret } from '../../../../plugins/security/shared/secrets.ts';

const SPEC: SecdefSpec = { type: 'basic_auth', subcommand: 'set-password', configField: 'password', secretWord: 'password', problem: passwordProblem };
const command = secdefCommand(SPEC);

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Harness {
  env: CliEnv;
  sent: Array<{ op: string; args: SetSecretArgs }>;
  out: string[];
  err: string[];
  dir: string;
}

function harness(opts: { stdin?: string; server?: 'running' | 'absent' | 'refusing' } = {}): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  dirs.push(dir);
  const sent: Harness['sent'] = [];
  const out: string[] = [];
  const err: string[] = [];
  const config = {
    security: [
      { name: 'crm', type: 'basic_auth', username: 'crm', password: 'from-config' },
      { name: 'erp', type: 'basic_auth', username: 'erp' },
      { name: 'billing', type: 'apikey' },
    ],
  } as unknown as SvcConfig;
  const env: CliEnv = {
    config,
    configPath: join(dir, 'svc.yaml'),
    openApiFragments: () => [],
    contributions: () => [],
    serviceMetas: async () => new Map(),
    openStore: async () => new SqliteStore(join(dir, 'svc.db')),
    control: async (op, args) => {
      if (opts.server === 'absent' || opts.server === undefined) return undefined;
      sent.push({ op, args: args as SetSecretArgs });
      return opts.server === 'refusing' ? { ok: false, error: "no basic_auth definition named 'crm'" } : { ok: true };
    },
    readStdin: async () => opts.stdin ?? '',
    out: (line) => void out.push(line),
    err: (line) => void err.push(line),
  };
  return { env, sent, out, err, dir };
}

describe('svc secdef set-password', () => {
  it('is registered under its words', () => {
    expect(command.words).toEqual(['secdef', 'set-password']);
  });

  it('sends only hashes to the running server: the secret from stdin, one line break dropped', async () => {
    const h = harness({ stdin: 'new:pass word\n', server: 'running' });
    expect(await command.run(['crm'], h.env)).toBe(0);
    expect(h.sent).toHaveLength(1);
    const { op, args } = h.sent[0]!;
    expect(op).toBe('secdef.set-password');
    expect(args.name).toBe('crm');
    expect(JSON.stringify(args)).not.toContain('new:pass');
    expect(await verifySecret('new:pass word', args.hash)).toBe(true);
    // The config value at this moment is acknowledged, so the server keeps the CLI secret.
    expect(args.configHash).not.toBeNull();
    expect(await verifySecret('from-config', args.configHash!)).toBe(true);
    expect(h.out.join('\n')).toContain('running server');
  });

  it('reads --file and sends a null config hash when the config has no password', async () => {
    const h = harness({ server: 'running' });
    const file = join(h.dir, 'secret.txt');
    writeFileSync(file, 'from-a-file\r\n');
    expect(await command.run(['erp', '--file', file], h.env)).toBe(0);
    expect(await verifySecret('from-a-file', h.sent[0]!.args.hash)).toBe(true);
    expect(h.sent[0]!.args.configHash).toBeNull();
    expect(await command.run(['erp', `--file=${file}`], h.env)).toBe(0);
    expect(h.sent).toHaveLength(2);
  });

  it('writes the store directly when no server runs', async () => {
    const h = harness({ stdin: 'offline-secret', server: 'absent' });
    expect(await command.run(['erp'], h.env)).toBe(0);
    const store = new SqliteStore(join(h.dir, 'svc.db'));
    const row = (await secretRows(store, 'basic_auth')).get('erp');
    await store.close();
    expect(row?.source).toBe('cli');
    expect(await verifySecret('offline-secret', row!.secret_hash)).toBe(true);
    expect(h.out.join('\n')).toContain('no server is running');
  });

  it.each([
    [['crm', 'secret-on-argv'], /never from arguments/],
    [['crm', '--password', 'x'], /never from arguments/],
    [[], /NAME is required/],
    [['crm', '--file'], /--file needs a path/],
    [['billing'], /'billing' is of type apikey, not basic_auth/],
  ])('refuses %j with a usage error and sends nothing', async (args, message) => {
    const h = harness({ stdin: 'x', server: 'running' });
    expect(await command.run(args, h.env)).toBe(2);
    expect(h.err.join('\n')).toMatch(message);
    expect(h.sent).toHaveLength(0);
  });

  it('leaves a name the config does not know to the running server (built-in definitions), else refuses it', async () => {
    const refusing = harness({ stdin: 'x', server: 'refusing' });
    expect(await command.run(['svc.builtin'], refusing.env)).toBe(2);
    expect(refusing.sent[0]!.args.configHash).toBeNull();
    const offline = harness({ stdin: 'x', server: 'absent' });
    expect(await command.run(['nope'], offline.env)).toBe(2);
    expect(offline.err.join('\n')).toMatch(/no basic_auth definition named 'nope'/);
  });

  it.each([
    ['an empty password', '\n'],
    ['a control character', 'a\u0007b'],
  ])('refuses %s', async (_label, stdin) => {
    const h = harness({ stdin, server: 'running' });
    expect(await command.run(['crm'], h.env)).toBe(2);
    expect(h.sent).toHaveLength(0);
  });

  it('reports a refusal of the running server as a runtime failure', async () => {
    const h = harness({ stdin: 'x', server: 'refusing' });
    expect(await command.run(['crm'], h.env)).toBe(1);
    expect(h.err.join('\n')).toContain('refused');
  });

  it('reports an unreadable file', async () => {
    const h = harness({ server: 'running' });
    expect(await command.run(['crm', '--file', join(h.dir, 'missing')], h.env)).toBe(2);
    expect(h.err.join('\n')).toContain('cannot read the password');
  });
});
