import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HostCalls } from '../../../kernel/services/host-calls.ts';
import { SvcError, type ErrorCode } from '../../../kernel/errors.ts';
import type { InvokeRequest } from '../../../kernel/sandbox/protocol.ts';
import type { HostCaller } from '../../../kernel/sandbox/runner.ts';
import { errorOfKind, PayloadTooLarge, ServiceError } from '../../../sdk/errors.ts';

/**
 * The envelope a host call's SvcError becomes on the wire, and the SDK error the service's
 * runtime rebuilds from it (sdk/internal/runtime.ts does `errorOfKind(kind, status, message)`).
 */
const request = { service: 'svc-a', cid: 'cid-1', method: 'POST' } as InvokeRequest;
const caller = {} as HostCaller;

function callsRaising(code: ErrorCode): HostCalls {
  const calls = new HostCalls(pino({ level: 'silent' }));
  calls.add({ op: 'probe.raise', args: z.object({}).strict(), handler: async () => Promise.reject(new SvcError(code, `raised ${code}`)) });
  return calls;
}

describe('host call errors crossing to the service', () => {
  it('PAYLOAD_TOO_LARGE crosses as kind PayloadTooLarge, 413, and the SDK rebuilds the PayloadTooLarge class', async () => {
    const reply = JSON.parse(await callsRaising('PAYLOAD_TOO_LARGE').run('probe.raise', '{}', request, caller));
    expect(reply).toEqual({ ok: false, error: { kind: 'PayloadTooLarge', status: 413, message: 'raised PAYLOAD_TOO_LARGE' } });
    const rebuilt = errorOfKind(reply.error.kind, reply.error.status, reply.error.message);
    expect(rebuilt).toBeInstanceOf(PayloadTooLarge);
    expect(rebuilt).toBeInstanceOf(ServiceError);
    expect(rebuilt).toMatchObject({ name: 'PayloadTooLarge', status: 413, message: 'raised PAYLOAD_TOO_LARGE' });
  });

  it('the other typed codes keep their kinds; a code with no class crosses as a plain Error with its status', async () => {
    const cases: Array<[ErrorCode, string, number]> = [
      ['BAD_REQUEST', 'BadRequest', 400],
      ['FORBIDDEN', 'Forbidden', 403],
      ['NOT_FOUND', 'NotFound', 404],
      ['CONFLICT', 'Conflict', 409],
      ['BAD_GATEWAY', 'BadGateway', 502],
      ['SERVICE_UNAVAILABLE', 'ServiceUnavailable', 503],
      ['UNSUPPORTED_MEDIA_TYPE', 'Error', 415],
    ];
    for (const [code, kind, status] of cases) {
      const reply = JSON.parse(await callsRaising(code).run('probe.raise', '{}', request, caller));
      expect(reply.error, code).toEqual({ kind, status, message: `raised ${code}` });
    }
  });
});
