import type { AdminEndpoint, AdminEndpoints } from '../../capabilities.ts';

/**
 * Endpoints other plugins put on the admin listener outside /admin/ (metrics, probes). Looked up
 * per request, like pages, so a plugin may add them whenever it sets up.
 */
export class EndpointRegistry implements AdminEndpoints {
  private readonly endpoints = new Map<string, AdminEndpoint>();

  add(path: string, endpoint: AdminEndpoint): void {
    if (!/^\/[A-Za-z0-9._~/-]*$/.test(path) || path === '/admin' || path.startsWith('/admin/')) throw new Error(`admin endpoints live outside /admin/, at a plain path: '${path}'`);
    if (this.endpoints.has(path)) throw new Error(`admin endpoint '${path}' is already served`);
    this.endpoints.set(path, endpoint);
  }

  get(path: string): AdminEndpoint | undefined {
    return this.endpoints.get(path);
  }
}
