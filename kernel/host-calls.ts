import type { Logger } from 'pino';
import { z } from 'zod';
import type { HostCall } from './plugin.ts';
import { SvcError, type ErrorCode } from './errors.ts';
import type { InvokeRequest, ServiceErrorKind } from './sandbox/protocol.ts';

const KIND_OF: Partial<Record<ErrorCode, ServiceErrorKind>> = {
  BAD_REQUEST: 'BadRequest',
  INVALID_INPUT: 'BadRequest',
  UNAUTHORIZED: 'Unauthorized',
  FORBIDDEN: 'Forbidden',
  NOT_FOUND: 'NotFound',
  CONFLICT: 'Conflict',
  BAD_GATEWAY: 'BadGateway',
  SERVICE_UNAVAILABLE: 'ServiceUnavailable',
};

/** Host calls of one request that may log; later ones run with logging off, and are counted. */
const LOGGED_CALLS_PER_REQUEST = 20;

interface RequestTally {
  calls: number;
  unlogged: number;
  refused: Map<string, number>;
}

/**
 * Host functions services reach through the SDK. Every call's arguments are checked
 * here before its handler runs; every outcome is an envelope, never a rejection.
 * A request that makes thousands of host calls costs a bounded number of log lines:
 * refusals are counted and reported once, when the request ends (`finish`).
 */
export class HostCalls {
  private readonly calls = new Map<string, HostCall>();
  private readonly tallies = new Map<string, RequestTally>();
  private readonly silent: Logger;

  constructor(private readonly log: Logger) {
    this.silent = log.child({}, { level: 'silent' });
  }

  add(call: HostCall): void {
    if (this.calls.has(call.op)) throw new Error(`host call '${call.op}' is registered twice`);
    this.calls.set(call.op, call);
  }

  async run(op: string, argsJson: string, invocation: InvokeRequest): Promise<string> {
    let tally = this.tallies.get(invocation.cid);
    if (!tally) this.tallies.set(invocation.cid, (tally = { calls: 0, unlogged: 0, refused: new Map() }));
    const reply = await this.answer(op, argsJson, invocation, tally);
    if (reply.startsWith('{"ok":false')) tally.refused.set(op.slice(0, 100), (tally.refused.get(op.slice(0, 100)) ?? 0) + 1);
    return reply;
  }

  /** The request ended: one line for what its host calls did not log each. */
  finish(invocation: InvokeRequest): void {
    const tally = this.tallies.get(invocation.cid);
    if (!tally) return;
    this.tallies.delete(invocation.cid);
    if (tally.refused.size || tally.unlogged) {
      const refused = Object.fromEntries(tally.refused);
      this.log.warn({ cid: invocation.cid, service: invocation.service, refused, unlogged: tally.unlogged }, 'host calls refused or not logged during this request');
    }
  }

  private async answer(op: string, argsJson: string, invocation: InvokeRequest, tally: RequestTally): Promise<string> {
    const call = this.calls.get(op);
    if (!call) return fail('Error', 500, `unknown host call '${op.slice(0, 100)}'`);
    let args: unknown;
    try {
      args = call.args.parse(JSON.parse(argsJson));
    } catch (err) {
      const why = err instanceof z.ZodError ? err.issues.slice(0, 5).map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ') : 'not JSON';
      return fail('Error', 500, `invalid arguments for ${op}: ${why}`);
    }
    tally.calls++;
    const logged = tally.calls <= LOGGED_CALLS_PER_REQUEST;
    if (!logged) tally.unlogged++;
    const log = logged ? this.log.child({ cid: invocation.cid, service: invocation.service, op }) : this.silent;
    try {
      const value = await call.handler(args, { cid: invocation.cid, service: invocation.service, channel: invocation.channel, log });
      return JSON.stringify({ ok: true, value: value ?? null });
    } catch (err) {
      if (err instanceof SvcError) return fail(KIND_OF[err.code] ?? 'Error', err.status, err.details);
      log.error({ err }, 'host call failed');
      return fail('Error', 500, `${op} failed`);
    }
  }
}

function fail(kind: ServiceErrorKind, status: number, message: string): string {
  return JSON.stringify({ ok: false, error: { kind, status, message } });
}
