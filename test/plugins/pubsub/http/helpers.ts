import type { LightMyRequestResponse } from 'fastify';
import { startKernel, type StartOptions, type TestKernel } from '../../../helpers/kernel.ts';
import type { PubSubEngine } from '../../../../plugins/pubsub/engine/engine.ts';

/**
 * Two clients with real Basic Auth definitions (checked by the basic-auth plugin):
 * alice publishes and subscribes under /orders/**, bob may only publish to /orders/new
 * and subscribe to /orders/*; carol has valid credentials but is no pub/sub endpoint.
 */
export const PUBSUB_CONFIG = `
security:
  - { name: sec.alice, type: basic_auth, username: alice, password: alice-password-1 }
  - { name: sec.bob, type: basic_auth, username: bob, password: bob-password-1 }
  - { name: sec.carol, type: basic_auth, username: carol, password: carol-password-1 }
pubsub_topic:
  - { name: /orders/new }
  - { name: /orders/paid }
  - { name: /orders/eu/new }
  - { name: /small, max_depth: 2 }
  - { name: /secret }
pubsub_endpoint:
  - { name: ep.alice, security: sec.alice, pub: ['/orders/**', '/small'], sub: ['/orders/**', '/small'] }
  - { name: ep.bob, security: sec.bob, pub: ['/orders/new'], sub: ['/orders/*'] }
`;

export const ALICE = basic('alice', 'alice-password-1');
export const BOB = basic('bob', 'bob-password-1');
export const CAROL = basic('carol', 'carol-password-1');
export const WRONG = basic('alice', 'not-the-password');

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export interface PubSubKernel extends TestKernel {
  engine: PubSubEngine;
  logs: Array<Record<string, unknown>>;
  call(method: string, url: string, auth: string | undefined, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /** Log lines whose message contains the text. */
  logged(text: string): Array<Record<string, unknown>>;
}

export async function startPubSub(opts: Partial<StartOptions> = {}): Promise<PubSubKernel> {
  const logs: Array<Record<string, unknown>> = [];
  const k = await startKernel({ config: PUBSUB_CONFIG, logs, ...opts });
  // The test reaches past the capability's contract into the engine it knows is behind it.
  const engine = k.kernel.api.lookup('pubsub.engine') as unknown as PubSubEngine;
  return Object.assign(k, {
    engine,
    logs,
    call(method: string, url: string, auth: string | undefined, body?: unknown, headers: Record<string, string> = {}) {
      const h: Record<string, string> = { ...headers };
      if (auth) h.authorization = auth;
      let payload: string | undefined;
      if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        h['content-type'] ??= 'application/json';
      }
      return k.app.inject({ method: method as 'POST', url, headers: h, payload });
    },
    logged(text: string) {
      return logs.filter((l) => String(l.msg).includes(text));
    },
  });
}

export function json(res: LightMyRequestResponse): unknown {
  return JSON.parse(res.body);
}
