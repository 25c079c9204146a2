import type { Kernel } from '../kernel/kernel.ts';

export const EXIT_OK = 0;
export const EXIT_RUNTIME = 1;

/** At most this many cut calls are named in the log line; the rest are counted. */
const NAMED_CALLS = 20;

/**
 * What a shutdown cut short leaves behind: connections still open on the channel listener, and
 * the service calls not answered yet (requests, and Use queue attempts, which run again after
 * the restart).
 */
async function whatIsCut(kernel: Kernel): Promise<Record<string, unknown>> {
  const connections = await new Promise<number | undefined>((resolve) => {
    kernel.app.server.getConnections((err, count) => resolve(err ? undefined : count));
    setTimeout(() => resolve(undefined), 100).unref();
  });
  const calls = kernel.pool.inFlight();
  return {
    connections,
    calls_in_flight: calls.length,
    queued_attempts: calls.filter((c) => c.queued).length,
    calls: calls.slice(0, NAMED_CALLS),
  };
}

/**
 * Serves until SIGTERM or SIGINT, then shuts down gracefully (docs/operations.md, "Starting and
 * stopping"): the listener stops accepting, requests in flight are answered, queued work that
 * runs gets the Use queue's wait, stores close, and the exit code is 0. Past
 * `server.drain_timeout_ms`, or on a second signal, the process exits at once with 1 after
 * logging what it cut. Resolves with the exit code.
 */
export function serveUntilSignalled(kernel: Kernel): Promise<number> {
  return new Promise<number>((done) => {
    let began: number | undefined;
    const cut = (msg: string, fields: Record<string, unknown>) =>
      whatIsCut(kernel).then((what) => {
        kernel.log.error({ ...fields, ...what, ms: Date.now() - began! }, msg);
        done(EXIT_RUNTIME);
      });
    const onSignal = (signal: NodeJS.Signals) => {
      if (began !== undefined) {
        void cut('second signal: exiting now, work in flight is cut', { signal });
        return;
      }
      began = Date.now();
      const deadlineMs = kernel.configStore.current().server.drain_timeout_ms;
      kernel.log.info({ signal, deadline_ms: deadlineMs }, 'shutting down: no new connections; finishing requests and queued work in flight (a second signal exits at once)');
      const deadline = setTimeout(() => void cut('shutdown deadline passed (server.drain_timeout_ms): exiting, work in flight is cut', { deadline_ms: deadlineMs }), deadlineMs);
      kernel.close().then(
        () => {
          clearTimeout(deadline);
          kernel.log.info({ ms: Date.now() - began! }, 'svc stopped');
          done(EXIT_OK);
        },
        (err: unknown) => {
          clearTimeout(deadline);
          kernel.log.error({ err }, 'shutdown failed');
          done(EXIT_RUNTIME);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
