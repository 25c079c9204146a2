import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { PubSubContext } from '../shared/http.ts';
import { openApiA } from './openapi.ts';
import { routesA } from './routes.ts';

/** Pub/sub REST API, variant A: four operations under /svc/pubsub (spec, Endpoints B). See README.md. */
export default definePlugin<Record<string, never>, undefined>({
  name: 'pubsub-rest-a',
  kind: 'pubsub',
  version: '1.0.0',
  sdk: '^1.0.0',
  needs: ['pubsub.engine', 'security.basic.authenticate'],
  configSchema: z.object({}).strict().default({}),
  contributes: { openapi: openApiA },
  setup(kernel) {
    const ctx = new PubSubContext(kernel);
    for (const route of routesA(ctx)) kernel.addRoute(route);
    return undefined;
  },
  hooks: {},
});
