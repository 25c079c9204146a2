/**
 * Polls `probe` every 20 ms until it returns (or resolves to) something truthy, and resolves with
 * it; throws `timed out waiting for <what>` after `timeoutMs`. The bound is a hang guard: a test
 * waits for the event it needs, never for a fixed time, and a miss fails with a clear message.
 */
export async function waitFor<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
