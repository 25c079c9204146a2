import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type TestKernel } from '../../../helpers/kernel.ts';
import { startNtlmServer, type NtlmServer } from '../../security/ntlm/ntlm-server.ts';

/** A service calls a Windows-style API behind NTLM through an outgoing connection, end to end. */
const PASSWORD = 'Ntlm-Passw0rd-of-alice';
const CALLER = `import { service, outgoing } from 'svc/sdk';
export default service({ async POST(ctx) { const r = await outgoing('intranet').post(ctx.cid, { params: { id: 7 }, payload: ctx.payload }); return { status: r.status }; } });
`;

let server: NtlmServer;
let k: TestKernel;
const logs: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  server = await startNtlmServer({ accounts: [{ user: 'alice', domain: 'CORP', password: PASSWORD }] });
  k = await startKernel({
    config: `
security:
  - { name: corp-alice, type: ntlm, username: 'CORP\\alice', password: "\${NTLM_PASSWORD}" }
channel_rest:
  - { name: c, url_path: /c, service: caller, security: none }
outgoing_rest:
  - { name: intranet, address: "${server.url}", url_path: "/orders/{id}", security: corp-alice }
`,
    env: { NTLM_PASSWORD: PASSWORD },
    services: { 'caller.ts': CALLER },
    logs,
  });
});
afterAll(async () => {
  await k?.close();
  await server?.close();
});

describe('an outgoing connection with NTLM credentials', () => {
  it('authenticates its connection once, then serves calls on it', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await k.app.inject({ method: 'POST', url: '/c', payload: { n: i } });
      expect(res.json()).toEqual({ status: 200 });
    }
    expect(server.handshakes).toBe(1);
    expect(server.sockets).toBe(1);
    expect(server.served.map((s) => [s.user, s.url, s.body])).toEqual([0, 1, 2, 3, 4].map((n) => ['alice', '/orders/7', JSON.stringify({ n })]));
    expect(JSON.stringify(logs)).not.toContain(PASSWORD);
  });
});
