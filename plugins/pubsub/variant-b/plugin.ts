import { z } from 'zod';
import { definePlugin } from '../../../sdk/plugin/index.ts';
import { PubSubContext, routeChannel } from '../shared/http.ts';
import { openApiB } from './openapi.ts';
import { routesB } from './routes.ts';

const NAME = 'pubsub-rest-b';
const TARGET = routeChannel(NAME).security;

/** Pub/sub REST API, variant B: publish and get under /pubsub (spec, Endpoints C). See README.md. */
export default definePlugin<Record<string, never>, PubSubContext>({
  name: NAME,
  kind: 'pubsub',
  version: '1.0.0',
  sdk: '^1.0.0',
  needs: ['pubsub.engine', 'security.basic.authenticate'],
  configSchema: z.object({}).strict().default({}),
  contributes: { openapi: openApiB },
  setup(kernel) {
    const ctx = new PubSubContext(kernel);
    for (const route of routesB(ctx, NAME, () => kernel.clock.now())) kernel.addRoute(route);
    return ctx;
  },
  hooks: {
    authenticate: ({ channel, state }) => (channel.security === TARGET ? state.authenticate : undefined),
  },
});
