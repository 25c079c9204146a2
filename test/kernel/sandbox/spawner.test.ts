import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Spawner, type SandboxProcess } from '../../../kernel/sandbox/spawner.ts';

/** A process that answers each line on fd 3 with the line upper-cased, and leaves when its pipe closes, as a sandbox process does. */
const ECHO = `
const { Socket } = require('node:net');
const pipe = new Socket({ fd: 3, readable: true, writable: true });
pipe.setEncoding('utf8');
pipe.on('data', (d) => { if (d.includes('exit')) process.exit(7); pipe.write(d.toUpperCase()); });
pipe.on('close', () => process.exit(0));
`;

let spawner: Spawner;
afterEach(() => spawner?.stop());

function start(code = ECHO): SandboxProcess {
  return spawner.spawn(process.execPath, ['-e', code], { PATH: process.env.PATH });
}
const channelOf = (p: SandboxProcess) => new Promise<Socket>((resolve) => p.onChannel(resolve));
const exitOf = (p: SandboxProcess) => new Promise<[number | null, NodeJS.Signals | null]>((resolve) => p.once('exit', (code, signal) => resolve([code, signal])));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function reply(channel: Socket, line: string): Promise<string> {
  channel.setEncoding('utf8');
  const got = new Promise<string>((resolve) => channel.once('data', resolve));
  channel.write(line);
  return got;
}

describe('the spawner (sandbox processes started outside the kernel)', () => {
  it("hands over the process's pipe: the kernel talks to it on fd 3, and hears its exit code", async () => {
    spawner = new Spawner();
    const p = start();
    expect(p.pid).toBeUndefined();
    const channel = await channelOf(p);
    expect(p.pid).toBeGreaterThan(0);
    expect(spawner.pids()).toEqual([p.pid]);
    expect(await reply(channel, 'hello')).toBe('HELLO');
    const exited = exitOf(p);
    channel.write('exit');
    expect(await exited).toEqual([7, null]);
    expect(p.exitCode).toBe(7);
    expect(spawner.pids()).toEqual([]);
    expect(p.kill('SIGTERM')).toBe(false);
  });

  it.runIf(process.platform === 'linux')('starts a process at the nice value asked for, before its own code runs; without one at the spawner\'s', async () => {
    spawner = new Spawner();
    // The process reports its own main thread's nice value as its first line, read from /proc at once.
    const SELF_NICE = `
const { Socket } = require('node:net');
const stat = require('node:fs').readFileSync('/proc/self/stat', 'utf8');
const pipe = new Socket({ fd: 3, readable: true, writable: true });
pipe.write(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
pipe.on('close', () => process.exit(0));
`;
    const niceOf = async (p: SandboxProcess) => {
      const channel = await channelOf(p);
      channel.setEncoding('utf8');
      return new Promise<string>((resolve) => channel.once('data', resolve));
    };
    const low = spawner.spawn(process.execPath, ['-e', SELF_NICE], { PATH: process.env.PATH }, 19);
    expect(await niceOf(low)).toBe('19');
    const normal = spawner.spawn(process.execPath, ['-e', SELF_NICE], { PATH: process.env.PATH });
    expect(await niceOf(normal)).toBe('0');
  });

  it('sends the signals the kernel asks for, also to a process whose pipe has not arrived yet', async () => {
    spawner = new Spawner();
    const p = start();
    const exited = exitOf(p);
    expect(p.kill('SIGKILL')).toBe(true);
    expect(await exited).toEqual([null, 'SIGKILL']);
    const q = start();
    await channelOf(q);
    const pid = q.pid!;
    q.kill('SIGTERM');
    expect(await exitOf(q)).toEqual([null, 'SIGTERM']);
    expect(alive(pid)).toBe(false);
  });

  it('a process that cannot be started is an error, then an exit, as a ChildProcess reports it', async () => {
    spawner = new Spawner();
    const p = spawner.spawn('/nonexistent/node', [], {});
    const error = new Promise<Error>((resolve) => p.on('error', resolve));
    const exited = exitOf(p);
    expect((await error).message).toMatch(/ENOENT/);
    await exited;
    expect(p.kill('SIGKILL')).toBe(false);
  });

  it('when the spawner is let go, what it ran is stopped and reported; the next spawn starts another spawner', async () => {
    spawner = new Spawner();
    const p = start();
    await channelOf(p);
    const pid = p.pid!;
    const spawnerPid = spawner.pid()!;
    const exited = exitOf(p);
    // Resolves once the spawner has left and been reaped: a kernel that exits next leaves no zombie to init.
    await spawner.stop();
    expect(alive(spawnerPid)).toBe(false);
    expect(await exited).toEqual([null, 'SIGKILL']);
    // Gone, not a zombie: the spawner reaps what it killed before it leaves.
    await expect.poll(() => alive(pid), { timeout: 5_000 }).toBe(false);
    const q = start();
    expect(await reply(await channelOf(q), 'again')).toBe('AGAIN');
  });

  it('when the spawner dies, the processes it ran are stopped and reported as exited; the next spawn starts another', async () => {
    spawner = new Spawner();
    const p = start();
    await channelOf(p);
    const pid = p.pid!;
    const first = spawner.pid()!;
    const exited = exitOf(p);
    process.kill(first, 'SIGKILL');
    expect(await exited).toEqual([null, 'SIGKILL']);
    await expect.poll(() => alive(pid), { timeout: 5_000 }).toBe(false);
    const q = start();
    expect(await reply(await channelOf(q), 'on')).toBe('ON');
    expect(spawner.pid()).not.toBe(first);
  });

  it('ignores the signals a terminal or a service manager sends the whole process group: they are the kernel\'s to act on', async () => {
    spawner = new Spawner();
    const p = start();
    const channel = await channelOf(p);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.kill(spawner.pid()!, signal);
    await new Promise((r) => setTimeout(r, 200));
    expect(alive(spawner.pid()!)).toBe(true);
    expect(await reply(channel, 'still')).toBe('STILL');
  });

  it('a process whose kernel end closes leaves (no orphan when the kernel goes)', async () => {
    spawner = new Spawner();
    const p = start();
    const channel = await channelOf(p);
    const exited = exitOf(p);
    channel.destroy();
    expect(await exited).toEqual([0, null]);
  });
});
