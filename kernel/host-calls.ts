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

/**
 * Host functions services reach through the SDK. Every call's arguments are checked
 * here before its handler runs; every outcome is an envelope, never a rejection.
 */
export class HostCalls {
  private readonly calls = new Map<string, HostCall>();

  constructor(private readonly log: Logger) {}

  add(call: HostCall): void {
    if (this.calls.has(call.op)) throw new Error(`host call '${call.op}' is registered twice`);
    this.calls.set(call.op, call);
  }

  async run(op: string, argsJson: string, invocation: InvokeRequest): Promise<string> {
    const call = this.calls.get(op);
    if (!call) return fail('Error', 500, `unknown host call '${op}'`);
    let args: unknown;
    try {
      args = call.args.parse(JSON.parse(argsJson));
    } catch (err) {
      const why = err instanceof z.ZodError ? err.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ') : 'not JSON';
      return fail('Error', 500, `invalid arguments for ${op}: ${why}`);
    }
    const log = this.log.child({ cid: invocation.cid, service: invocation.service, op });
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
