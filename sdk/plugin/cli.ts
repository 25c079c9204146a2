import type { CliEnv } from './contract.ts';
import type { DataStore } from './store.ts';

/**
 * A CLI command's op: sent to the running server's control socket; with no server running, done
 * by `offline` on the data store when the command can do without the server (reads, and writes
 * every node reads from the store), else refused with `noServer`. Returns the op's value, or the
 * exit code after saying why on stderr (1: the server refused, or no server).
 */
export async function controlOrStore(
  env: CliEnv,
  op: string,
  args: unknown,
  offline: ((store: DataStore) => Promise<unknown>) | undefined,
  noServer: string,
): Promise<{ value: unknown } | number> {
  const reply = await env.control(op, args);
  if (reply) {
    if (reply.ok) return { value: reply.value };
    env.err(`the server refused: ${reply.error ?? 'unknown error'}`);
    return 1;
  }
  if (!offline) {
    env.err(noServer);
    return 1;
  }
  const store = await env.openStore();
  try {
    return { value: await offline(store) };
  } catch (err) {
    env.err((err as Error).message);
    return 1;
  } finally {
    await store.close();
  }
}

/**
 * A CLI command's refusal of its arguments: `why`, when given, then the command's usage line
 * (`usage: svc LINE`) on stderr. Returns the exit code for it, 2.
 */
export function usage(env: CliEnv, line: string, why?: string): number {
  env.err(why === undefined ? `usage: svc ${line}` : `${why}\nusage: svc ${line}`);
  return 2;
}
