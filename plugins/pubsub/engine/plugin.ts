import { z } from 'zod';
import '../../capabilities.ts';
import { scopedFor, SvcError } from '../../../sdk/plugin/index.ts';
import { definePlugin, type CliCommand, type HostCall, type KernelApi } from '../../../sdk/plugin/index.ts';
import { expirationField, messageData, textField } from '../shared/fields.ts';
import { assembleOpenApi, OPENAPI_PATH } from '../shared/openapi.ts';
import { BUILTIN } from './builtin.ts';
import { Demo, type DemoImport } from './demo.ts';
import { pubsubControls } from './control.ts';
import { ClusterEngine } from './cluster.ts';
import { PubSubEngine } from './engine.ts';
import type { PubSubStrategy } from './strategy.ts';
import { isTopicName } from '../shared/patterns.ts';
import { DEFAULT_MAX_DEPTH, pubsubSections, resourcesOf, validatePubsub } from './schema.ts';

const VERSION = '1.0.0';

const optionsSchema = z
  .object({
    default_max_depth: z
      .number()
      .int()
      .min(1)
      .max(10_000_000)
      .default(DEFAULT_MAX_DEPTH)
      .describe('Queue depth limit of topics that set no max_depth.'),
    sweep_interval_ms: z.number().int().min(100).max(3_600_000).default(1_000).describe('How often expired messages are swept.'),
    lease_ms: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(30_000)
      .describe('On PostgreSQL (several nodes): how long the messages of a get stay reserved for the node answering it; if that node dies, any node delivers them again after this.'),
  })
  .strict()
  .default({ default_max_depth: DEFAULT_MAX_DEPTH, sweep_interval_ms: 1_000, lease_ms: 30_000 });

type Options = z.infer<typeof optionsSchema>;

interface PubSubState {
  kernel: KernelApi;
  engine: PubSubStrategy;
  builtinRegistered: boolean;
}

/** What a service passes to the SDK's `publish(topic, data, opts)`. */
export const publishArgs = z
  .object({
    topic: z.string().min(1).describe("Topic name, e.g. /orders/new; a tenant's service names its own tenant's topics this way too."),
    data: messageData,
    opts: z
      .object({
        priority: z.number().int().min(0).max(9).default(5).describe('0 (lowest) to 9.'),
        expiration: expirationField.optional().describe('Seconds; none: the message never expires.'),
        correl_id: textField('Correlation ID; defaults to the CID of the calling request.'),
        in_reply_to: textField('ID of the message replied to.'),
        ext_client_id: textField('For logging and audit.'),
        has_gd: z.boolean().default(true).describe('Guaranteed Delivery: stored durably before publish() resolves. Default true.'),
        mime_type: z.string().min(1).max(255).default('application/json'),
      })
      .strict()
      .default({ priority: 5, has_gd: true, mime_type: 'application/json' }),
  })
  .strict();

function publishHostCall(engine: PubSubStrategy): HostCall<z.infer<typeof publishArgs>> {
  return {
    op: 'pubsub.publish',
    args: publishArgs,
    async handler({ topic, data, opts }, ctx) {
      // A tenant's service names its tenant's topics (`/orders` from acme/billing is acme/orders), and only those.
      const stored = isTopicName(topic) ? scopedFor(ctx.service, topic) : undefined;
      const endpoint = stored === undefined ? undefined : engine.endpointForService(ctx.service, stored);
      if (!endpoint || stored === undefined) {
        ctx.log.warn({ topic: stored ?? topic }, 'pubsub: service publish refused, no pubsub_endpoint grants this service the topic');
        throw new SvcError('FORBIDDEN', `No publication permission for topic ${topic.slice(0, 200)}`);
      }
      const { msgId } = await engine.publish({
        topic: stored,
        data,
        mimeType: opts.mime_type,
        priority: opts.priority,
        expiration: opts.expiration,
        correlId: opts.correl_id ?? ctx.cid,
        inReplyTo: opts.in_reply_to,
        extClientId: opts.ext_client_id,
        hasGd: opts.has_gd,
        publisher: `service:${ctx.service}`,
      });
      return { msg_id: msgId };
    },
  };
}

/** The built-in test definition must exist in every environment; basic-auth owns definitions. */
async function ensureBuiltinDefinition(state: PubSubState): Promise<void> {
  if (state.builtinRegistered) return;
  const register = state.kernel.lookup('security.basic.register');
  if (!register) {
    state.kernel.log.warn({ definition: BUILTIN.secdef }, "pubsub: no 'security.basic.register' capability (basic-auth plugin); the built-in test endpoint cannot authenticate");
    return;
  }
  await register({ name: BUILTIN.secdef, username: BUILTIN.username, lifetime: 'builtin' });
  state.builtinRegistered = true;
}

const demoCommand: CliCommand = {
  words: ['demo'],
  usage: 'svc demo',
  describe: 'Imports demo credentials and topics for trying pub/sub variant B into the running server (gone at restart).',
  async run(_args, env) {
    const reply = await env.control('pubsub.demo', {});
    if (!reply) {
      env.err('no server is running: start it with `svc start`, then run `svc demo` (the demo lives in the running server only)');
      return 1;
    }
    if (!reply.ok) {
      env.err(`demo import failed: ${reply.error ?? 'unknown error'}`);
      return 1;
    }
    const demo = reply.value as DemoImport;
    const base = `http://${env.config.server.host}:${env.config.server.port}`;
    env.out('Demo configuration imported (in memory only: it does not survive a restart).');
    env.out(`Topics: ${demo.topics.join(', ')}`);
    for (const u of demo.users) env.out(`User ${u.username} / password ${u.password}  (subscribed to ${u.subscribed.join(', ')})`);
    const u = demo.users[0]!;
    env.out('Try:');
    env.out(`  curl -u ${u.username}:${u.password} ${base}/pubsub/topic/demo/orders -d '{"data": "hello", "priority": 7}'`);
    env.out(`  curl -u ${u.username}:${u.password} -X POST ${base}/pubsub/messages/get -d '{"max_messages": 10}'`);
    return 0;
  },
};

const openapiCommand: CliCommand = {
  words: ['openapi'],
  usage: 'svc openapi',
  describe: `Prints the OpenAPI 3.1 document of the pub/sub REST APIs (the enabled variants, A and B by default); also served at GET ${OPENAPI_PATH}.`,
  async run(_args, env) {
    env.out(JSON.stringify(assembleOpenApi(VERSION, env.openApiFragments()), null, 2));
    return 0;
  },
};

/** The pub/sub engine: topics, endpoints, subscriptions, durable queues. See README.md. */
export default definePlugin<Options, PubSubState>({
  name: 'pubsub',
  kind: 'pubsub',
  version: VERSION,
  sdk: '^1.0.0',
  provides: ['pubsub.engine', 'pubsub.stats'],
  configSchema: optionsSchema,
  contributes: {
    sections: pubsubSections,
    validateConfig: validatePubsub,
  },
  async setup(kernel, options) {
    const common = {
      store: kernel.store,
      clock: kernel.clock,
      log: kernel.log.child({ plugin: 'pubsub' }),
      defaultMaxDepth: options.default_max_depth,
      sweepIntervalMs: options.sweep_interval_ms,
      quotas: kernel.tenantQuotas,
    };
    // On PostgreSQL the database is authoritative, so that several nodes share the queues (README.md).
    let engine: PubSubStrategy;
    if (kernel.store.dialect === 'postgres') {
      const cluster = await ClusterEngine.open({ ...common, leaseMs: options.lease_ms });
      kernel.provide('pubsub.stats', () => cluster.stats());
      engine = cluster;
    } else {
      const memory = await PubSubEngine.open(common);
      kernel.provide('pubsub.stats', () => ({ subscriptions: memory.subscriptionList().map((s) => ({ endpoint: s.endpoint, topic: s.topic, depth: s.queue.count })) }));
      engine = memory;
    }
    kernel.provide('pubsub.engine', engine);
    kernel.addHostCall(publishHostCall(engine));
    const demo = new Demo(engine, () => kernel.lookup('security.basic.register'));
    kernel.addControl({ op: 'pubsub.demo', args: z.object({}).strict(), handler: () => demo.run() });
    for (const op of pubsubControls(engine)) kernel.addControl(op);
    // Built at the first request, once every plugin has set up: the document lists the enabled variants.
    let openapi: unknown;
    kernel.addRoute({ name: 'pubsub openapi', method: 'GET', url: OPENAPI_PATH, handler: (ex) => ex.reply(200, (openapi ??= assembleOpenApi(VERSION, kernel.openApiFragments()))) });
    return { kernel, engine, builtinRegistered: false };
  },
  async onConfig(state, config) {
    await state.engine.applyConfig(resourcesOf(config));
    await ensureBuiltinDefinition(state);
  },
  stop: (state) => state.engine.close(),
  hooks: {},
  cli: [demoCommand, openapiCommand],
});
