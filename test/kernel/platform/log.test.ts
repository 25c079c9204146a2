import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOG_MODULE = fileURLToPath(new URL('../../../kernel/platform/log.ts', import.meta.url));

/** Runs a script against kernel/platform/log.ts in its own process and returns its stdout lines as JSON. */
function linesOf(script: string): Array<Record<string, unknown>> {
  const code = `import { serverLoggers } from ${JSON.stringify(LOG_MODULE)};\n${script}`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', maxBuffer: 64 << 20 });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('server loggers', () => {
  it('writes the access line in the same shape as pino lines, with the URL escaped', () => {
    const [info, access] = linesOf(`
      const { log, access } = serverLoggers('info', ['*.password']);
      log.info({ user: { password: 'p' } }, 'hello');
      access('abc123', 'orders "eu"', 'GET', '/orders/1?q="x"\\n', 200, 1.25);
    `);
    expect(info).toMatchObject({ level: 30, pid: expect.any(Number), hostname: expect.any(String), user: { password: '[redacted]' }, msg: 'hello' });
    expect(access).toEqual({ level: 30, time: expect.any(Number), pid: info!.pid, hostname: info!.hostname, cid: 'abc123', channel: 'orders "eu"', method: 'GET', url: '/orders/1?q="x"\n', status: 200, ms: 1.25, msg: 'request' });
    expect(Object.keys(access!).slice(0, 4)).toEqual(Object.keys(info!).slice(0, 4));
  });

  it('has no access log above info, and keeps lines written just before process.exit, in order', () => {
    const lines = linesOf(`
      const quiet = serverLoggers('warn', []);
      if (quiet.access !== undefined) throw new Error('access log at warn');
      const { log, access } = serverLoggers('info', []);
      for (let i = 0; i < 1000; i++) access('c' + i, 'ch', 'GET', '/x', 200, 0.1);
      log.error('last');
      process.exit(0);
    `);
    expect(lines).toHaveLength(1001);
    expect(lines.slice(0, 1000).map((l) => l.cid)).toEqual(Array.from({ length: 1000 }, (_, i) => 'c' + i));
    expect(lines[1000]).toMatchObject({ level: 50, msg: 'last' });
  });

  it('keeps every line whole and in order across many flushes: multi-byte text, and a line larger than the batch', () => {
    const lines = linesOf(`
      const { log, access } = serverLoggers('info', []);
      for (let i = 0; i < 6000; i++) access('c' + i, 'chännel', 'GET', '/naïve/' + '€'.repeat(i % 50) + '/😀', 200, 0.1);
      log.info({ big: 'x'.repeat(600 * 1024) + 'é' }, 'big');
      access('after', 'ch', 'GET', '/x', 200, 0.1);
      // Past the flush interval, so most of it left through the asynchronous writer, not the exit flush.
      setTimeout(() => process.exit(0), 200);
    `);
    expect(lines).toHaveLength(6002);
    expect(lines.slice(0, 6000).every((l, i) => l.cid === 'c' + i && l.channel === 'chännel' && l.url === '/naïve/' + '€'.repeat(i % 50) + '/😀')).toBe(true);
    expect((lines[6000]!.big as string).length).toBe(600 * 1024 + 1);
    expect(lines[6001]).toMatchObject({ cid: 'after' });
  });

  it('keeps running when stdout goes away (a closed pipe drops the lines, it does not throw)', async () => {
    const code = `import { serverLoggers } from ${JSON.stringify(LOG_MODULE)};
      const { log, access } = serverLoggers('info', []);
      log.info('first');
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 0; i < 20000; i++) access('c' + i, 'ch', 'GET', '/x', 200, 0.1);
      await new Promise((r) => setTimeout(r, 100));
      process.stderr.write('still here\\n');`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // Read the first line, then close the pipe, as `svc start | head -1` does.
    await new Promise<void>((r) => child.stdout.once('data', () => r()));
    child.stdout.destroy();
    const status = await new Promise<number | null>((r) => child.once('exit', r));
    expect(stderr).toContain('still here');
    expect(status).toBe(0);
  });
});
