import { STATUS_CODES } from 'node:http';
import type { PubSubDelivery, PubSubEndpointView, PubSubEngineApi } from '../../capabilities.ts';
import type { AuthInfo, Capabilities } from '../../../sdk/plugin/index.ts';
import type { Exchange } from '../../../sdk/plugin/index.ts';
import { qualify, SvcError } from '../../../sdk/plugin/index.ts';
import type { KernelApi } from '../../../sdk/plugin/index.ts';
import { shortTopic } from './patterns.ts';
import { topicFromPath } from './topic-name.ts';

export const BASIC_CHALLENGE = { 'WWW-Authenticate': 'Basic realm="svc pubsub", charset="UTF-8"' };

/** The MIME type of a published message: Content-Type without parameters; form bodies are JSON (spec B). */
export function mimeTypeOf(contentType: string | string[] | undefined): string {
  if (contentType === 'application/json') return contentType;
  const value = (Array.isArray(contentType) ? contentType[0] : contentType)?.split(';')[0]?.trim().toLowerCase();
  if (!value) return 'application/json';
  return value === 'application/x-www-form-urlencoded' ? 'text/json' : value;
}

/** `200 OK`, `401 Unauthorized`: the status descriptions variant B puts in its bodies. */
export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
}

/**
 * What a variant's routes are to the hook chain: the json format reads their bodies, the rate-limit
 * plugin applies the caller's definition rules, and only the variant itself (target `@<plugin>`)
 * authenticates them, as a pub/sub caller is an endpoint, not a channel's definition or group.
 */
export function routeChannel(plugin: string): { security: string; data_format: string } {
  return { security: `@${plugin}`, data_format: 'json' };
}

/** What both variants need at request time; looked up lazily, as plugin setup order is not fixed. */
export class PubSubContext {
  private engineRef: PubSubEngineApi | undefined;
  private authRef: Capabilities['security.basic.authenticate'] | undefined;

  constructor(private readonly kernel: KernelApi) {}

  get engine(): PubSubEngineApi {
    this.engineRef ??= this.kernel.lookup('pubsub.engine');
    if (!this.engineRef) throw new SvcError('SERVICE_UNAVAILABLE', 'Pub/sub is not available', { cause: new Error('the pubsub engine plugin is not loaded') });
    return this.engineRef;
  }

  /**
   * The authenticate step of the variant's routes. HTTP Basic Auth only (spec, Authentication 6),
   * checked by the basic-auth plugin against every definition; the one that matched must name an endpoint.
   */
  readonly authenticate = (ex: Exchange): void | Promise<void> => {
    this.authRef ??= this.kernel.lookup('security.basic.authenticate');
    if (!this.authRef) throw new SvcError('SERVICE_UNAVAILABLE', 'Pub/sub is not available', { cause: new Error('the basic-auth plugin is not loaded') });
    const header = ex.headers.authorization;
    const info = this.authRef(Array.isArray(header) ? header[0] : header);
    // A cached credential answers at once: no promise, and the chain goes on without awaiting.
    if (info instanceof Promise) return info.then((verified) => this.admit(ex, verified));
    this.admit(ex, info);
  };

  private admit(ex: Exchange, info: AuthInfo | undefined): void {
    if (!info) throw new PubSubRefusal('UNAUTHORIZED', 'missing or invalid Basic Auth credentials', BASIC_CHALLENGE);
    ex.auth = info;
    ex.hideHeader('authorization');
    this.endpointOf(ex);
  }

  /** The endpoint the caller authenticated as (after the authenticate step). */
  endpointOf(ex: Exchange): PubSubEndpointView {
    const definition = ex.auth?.definition;
    const endpoint = definition === undefined ? undefined : this.engine.endpointBySecurity(definition);
    if (!endpoint) throw new PubSubRefusal('UNAUTHORIZED', `basic_auth definition '${definition}' identifies no pub/sub endpoint`, BASIC_CHALLENGE);
    return endpoint;
  }
}

/**
 * A refusal whose reason goes to the log only; the client gets the catalogue's basic message
 * (spec, Errors 6: details and tracebacks in the server log).
 */
export class PubSubRefusal extends SvcError {
  constructor(
    code: ConstructorParameters<typeof SvcError>[0],
    readonly reason: string,
    headers?: Record<string, string>,
    details?: string,
  ) {
    super(code, details, { headers });
  }
}

/**
 * The topic of the path's wildcard part, in the caller's namespace: a tenant's endpoint names its
 * tenant's topics, short (`/orders` is `acme/orders`), and no other name reaches anyone else's.
 * 404 when it cannot be a topic name.
 */
export function topicOf(ex: Exchange, endpoint: PubSubEndpointView): string {
  const topic = topicFromPath(ex.pathParams['*']);
  if (topic === undefined) throw new PubSubRefusal('NOT_FOUND', `not a topic name: '${String(ex.pathParams['*']).slice(0, 200)}'`, undefined, 'Topic not found');
  return qualify(endpoint.tenant, topic);
}

/** Messages as a tenant's endpoint sees them: its topics by the short names it uses (`/orders`). */
export function shownTo<T extends { topic_name: string }>(endpoint: PubSubEndpointView, bodies: T[]): T[] {
  if (endpoint.tenant !== undefined) for (const body of bodies) body.topic_name = shortTopic(body.topic_name);
  return bodies;
}

export function requirePublish(endpoint: PubSubEndpointView, topic: string, engine: PubSubEngineApi): void {
  if (!endpoint.canPublish(topic)) throw new PubSubRefusal('FORBIDDEN', `endpoint '${endpoint.name}' has no publication permission for '${topic}'`);
  if (!engine.hasTopic(topic)) throw new PubSubRefusal('NOT_FOUND', `no topic '${topic}'`, undefined, 'Topic not found');
}

export function requireSubscribe(endpoint: PubSubEndpointView, topic: string, engine: PubSubEngineApi): void {
  if (!endpoint.canSubscribe(topic)) throw new PubSubRefusal('FORBIDDEN', `endpoint '${endpoint.name}' has no subscription permission for '${topic}'`);
  if (!engine.hasTopic(topic)) throw new PubSubRefusal('NOT_FOUND', `no topic '${topic}'`, undefined, 'Topic not found');
}

/** Replies; done(written) says whether the response left the process or the connection failed first. */
export function replyTracked(ex: Exchange, status: number, body: unknown, done: (written: boolean) => void): void {
  let settled = false;
  ex.onSent((written) => {
    if (!settled) (settled = true), done(written);
  });
  try {
    ex.reply(status, body);
  } catch (err) {
    if (!settled) (settled = true), done(false);
    throw err;
  }
}

/** Sends a get's messages; they are deleted once written, or go back to their queues if the connection failed. */
export function replyWithDelivery(ex: Exchange, body: unknown, delivery: PubSubDelivery, context: Record<string, unknown>): void {
  replyTracked(ex, 200, body, (written) => {
    if (written) {
      delivery.ack();
      return;
    }
    ex.log.warn({ ...context, messages: delivery.messages.length }, 'pubsub: response not written, messages go back to the queue');
    delivery.nack();
  });
}

/** Logs a failed call with everything known; returns the status and the basic details for the client. */
export function describeFailure(ex: Exchange, err: unknown, operation: string, invalidDetails: string): { status: number; details: string; headers: Record<string, string> | undefined } {
  if (err instanceof PubSubRefusal) {
    ex.log.info({ operation, code: err.code, reason: err.reason }, `pubsub: ${operation} refused`);
    return { status: err.status, details: err.details, headers: err.headers };
  }
  if (err instanceof SvcError && err.code === 'MALFORMED_BODY') {
    ex.log.info({ operation, code: err.code, reason: err.details }, `pubsub: ${operation} refused`);
    return { status: err.status, details: invalidDetails, headers: undefined };
  }
  if (err instanceof SvcError) {
    const level = err.status >= 500 ? 'warn' : 'info';
    ex.log[level]({ operation, code: err.code, details: err.details, cause: err.cause }, `pubsub: ${operation} failed`);
    return { status: err.status, details: err.details, headers: err.headers };
  }
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE') {
    ex.log.info({ operation, code }, `pubsub: ${operation} abandoned, the client closed the connection`);
    return { status: 400, details: 'Bad request', headers: undefined };
  }
  ex.log.error({ err, operation }, `pubsub: ${operation} failed`);
  return { status: 500, details: 'Internal server error', headers: undefined };
}

/** The subscribe operation both variants share (spec: Subscription state table); they shape the body. */
export async function subscribeCaller(ctx: PubSubContext, ex: Exchange): Promise<{ subKey: string; created: boolean; queueDepth: number }> {
  const endpoint = ctx.endpointOf(ex);
  const topic = topicOf(ex, endpoint);
  requireSubscribe(endpoint, topic, ctx.engine);
  const result = await ctx.engine.subscribe(endpoint.name, topic);
  ex.log.info({ endpoint: endpoint.name, topic }, result.created ? 'pubsub: subscribed' : 'pubsub: already subscribed, no new subscription made');
  return result;
}

/** The unsubscribe operation both variants share: accepted whether or not a subscription exists. */
export async function unsubscribeCaller(ctx: PubSubContext, ex: Exchange): Promise<void> {
  const endpoint = ctx.endpointOf(ex);
  const topic = topicOf(ex, endpoint);
  const existed = await ctx.engine.unsubscribe(endpoint.name, topic);
  ex.log.info({ endpoint: endpoint.name, topic }, existed ? 'pubsub: unsubscribed, subscription key deleted' : 'pubsub: unsubscribe without a subscription, nothing to do');
}
