import type { AdminPage, AdminPages } from '../../capabilities.ts';

const API_PREFIX = '/admin/api/';

/**
 * Pages other plugins put on the admin listener (the Dashboard). Looked up per request, so a
 * plugin may add them whenever it sets up, before or after the listener starts.
 */
export class PageRegistry implements AdminPages {
  private readonly pages = new Map<string, AdminPage>();

  add(path: string, page: AdminPage): void {
    if (!path.startsWith('/admin/') || path.startsWith(API_PREFIX)) throw new Error(`admin pages live under /admin/ and outside ${API_PREFIX}: '${path}'`);
    this.pages.set(path, page);
  }

  get(path: string): AdminPage | undefined {
    return this.pages.get(path);
  }
}

/** Pages run only their own code: no inline script, nothing from elsewhere, not framed. */
export const PAGE_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;
