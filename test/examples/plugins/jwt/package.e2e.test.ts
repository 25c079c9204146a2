import { rmSync } from 'node:fs';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, startCli, type CliServer } from '../../../helpers/cli.ts';
import { projectWithPackages } from '../../support.ts';

/**
 * What a user does: `npm install` the plugin package into a project (node_modules/svc-plugin-jwt,
 * here a symlink as npm leaves a local folder), name it in config by package name, `svc start`.
 * The plugin's real path is examples/plugins/jwt, whose package.json is its own: only the
 * kernel's resolve hook lets its `import … from 'svc/sdk/plugin'` find the SDK, and the 401s
 * below (not 500s) show the SvcError it throws is the kernel's own class.
 */
const SECRET = 'e2e-shared-secret-of-at-least-32-chars';
const CONFIG = `
plugins:
  jwt: { module: svc-plugin-jwt }
security:
  - { name: partners, type: jwt, algorithms: [HS256], secret: "\${JWT_SECRET}", audience: orders-api }
channel_rest:
  - { name: partners, url_path: /partners, service: whoami, security: partners }
`;
const WHOAMI = {
  'whoami.ts': `import { service } from 'svc/sdk';\nexport default service({ handle: (ctx) => ({ user: ctx.user ?? null, authorization: ctx.headers.authorization ?? null }) });\n`,
};

describe('jwt example plugin by package name under svc start', () => {
  let server: CliServer;
  let dir: string;
  beforeAll(async () => {
    dir = makeProject(CONFIG, WHOAMI, projectWithPackages(['jwt']));
    server = await startCli(dir, { JWT_SECRET: SECRET });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const token = (aud: string) =>
    new SignJWT({ sub: 'acme', aud }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(SECRET));

  it('lets a valid token in over a real socket, sub as the user', async () => {
    const res = await fetch(`${server.url}/partners`, { headers: { authorization: `Bearer ${await token('orders-api')}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ user: { type: 'jwt', definition: 'partners', username: 'acme' }, authorization: null });
  });

  it('answers 401 with the catalogue body, the CID and a Bearer challenge', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${await token('billing-api')}` }]) {
      const res = await fetch(`${server.url}/partners`, { headers });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { cid: string };
      expect(body).toEqual({ result: 'Error', cid: res.headers.get('x-svc-cid'), details: 'Unauthorized' });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="svc"/);
    }
  });
});
