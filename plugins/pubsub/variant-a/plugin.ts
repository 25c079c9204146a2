import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { PubSubContext, routeChannel } from '../shared/http.ts';
import { openApiA } from './openapi.ts';
import { routesA } from './routes.ts';

const NAME = 'pubsub-rest-a';
const TARGET = routeChannel(NAME).security;

/** Pub/sub REST API, variant A: four operations under /svc/pubsub (spec, Endpoints B). See README.md. */
export default definePlugin<Record<string, never>, PubSubContext>({
  name: NAME,
  kind: 'pubsub',
  version: '1.0.0',
  sdk: '^1.0.0',
  needs: ['pubsub.engine', 'security.basic.authenticate'],
  configSchema: z.object({}).strict().default({}),
  contributes: { openapi: openApiA },
  setup(kernel) {
    const ctx = new PubSubContext(kernel);
    for (const route of routesA(ctx, NAME)) kernel.addRoute(route);
    return ctx;
  },
  hooks: {
    authenticate: ({ channel, state }) => (channel.security === TARGET ? state.authenticate : undefined),
  },
});
