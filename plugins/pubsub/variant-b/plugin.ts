import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { PubSubContext } from '../shared/http.ts';
import { openApiB } from './openapi.ts';
import { routesB } from './routes.ts';

/** Pub/sub REST API, variant B: publish and get under /pubsub (spec, Endpoints C). See README.md. */
export default definePlugin<Record<string, never>, undefined>({
  name: 'pubsub-rest-b',
  kind: 'pubsub',
  version: '1.0.0',
  sdk: '^1.0.0',
  needs: ['pubsub.engine', 'security.basic.authenticate'],
  configSchema: z.object({}).strict().default({}),
  contributes: { openapi: openApiB },
  setup(kernel) {
    const ctx = new PubSubContext(kernel);
    for (const route of routesB(ctx, () => kernel.clock.now())) kernel.addRoute(route);
    return undefined;
  },
  hooks: {},
});
