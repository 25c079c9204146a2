import { describe, expect, it } from 'vitest';
import { EndpointRegistry } from '../../../../plugins/admin/api/endpoints.ts';

describe("the admin listener's endpoints of other plugins ('admin.endpoints')", () => {
  const ok = () => ({ status: 200, contentType: 'text/plain', body: 'ok' });

  it('takes plain paths outside /admin/, once each', () => {
    const r = new EndpointRegistry();
    r.add('/metrics', ok);
    r.add('/probes/ready', ok);
    expect(r.get('/metrics')).toBe(ok);
    expect(r.get('/other')).toBeUndefined();
    expect(() => r.add('/metrics', ok)).toThrow('already served');
  });

  it('refuses /admin and everything under it, patterns and relative paths', () => {
    const r = new EndpointRegistry();
    for (const path of ['/admin', '/admin/', '/admin/api/x', '/m/*', '/m/:id', 'metrics', '/a b', '/a?b']) expect(() => r.add(path, ok), path).toThrow('outside /admin/');
  });
});
