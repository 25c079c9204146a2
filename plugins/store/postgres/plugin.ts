import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';

/**
 * PostgreSQL as the data store, for `server.store: postgres://…` (several nodes on one database).
 * The driver loads only when such a URL is configured: a SQLite server never imports `pg`.
 */
export default definePlugin({
  name: 'postgres',
  kind: 'store',
  version: '1.0.0',
  sdk: '^1.2.0',
  configSchema: z.object({}).strict(),
  contributes: {
    dataStore: {
      schemes: ['postgres', 'postgresql'],
      open: async (url, ctx) => (await import('./store.ts')).PgStore.open(url, ctx),
    },
  },
  hooks: {},
});
