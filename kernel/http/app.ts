import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ERRORS, errorBody } from '../errors.ts';
import { clientErrorReply, frameworkErrorReply, listenerTimeouts } from '../../sdk/plugin/client-error.ts';
import { listenerDrain } from '../../sdk/plugin/listener-drain.ts';
import { HTTP_METHODS } from '../../sdk/http.ts';
import type { ServerConfig } from '../config/schema.ts';
import { HttpExchange } from './exchange.ts';
import { replyWithError, runChain, type ChainWatch } from './chain.ts';
import type { ChannelRouter } from './router.ts';
import type { PeerFilter } from './client-address.ts';
import type { AccessLog } from '../platform/log.ts';
import { RefusalPauses } from '../platform/refusal-pause.ts';
import { SvcError } from '../errors.ts';

/** Correlation IDs: a random per-process prefix and a counter, unique without a syscall per request. */
export function cidGenerator(): () => string {
  const prefix = randomBytes(6).toString('hex');
  let counter = 0;
  return () => prefix + (counter++).toString(16).padStart(10, '0');
}

export interface HttpDeps {
  log: Logger;
  /** One line per request; undefined when the log level leaves it out. */
  accessLog: AccessLog | undefined;
  router: () => ChannelRouter;
  server: () => ServerConfig;
  trusted: () => PeerFilter | undefined;
  /** True once shutdown began: responses then close their connection, so draining ends. */
  closing: () => boolean;
  /** Bounds the chain steps that have no limit of their own (server.step_timeout_ms). */
  steps?: ChainWatch;
}

function splitUrl(url: string): { path: string; search: string } {
  const q = url.indexOf('?');
  return q === -1 ? { path: url, search: '' } : { path: url.slice(0, q), search: url.slice(q + 1) };
}

function parseQuery(search: string): Record<string, string | string[]> {
  // No prototype: `?__proto__=x` is a parameter like any other, not a way to reshape the object.
  const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  if (!search) return out;
  for (const [k, v] of new URLSearchParams(search)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/**
 * Writes the access line where Fastify reports a finished response (its log controller, told of
 * every response once it finished or failed), not from an onResponse hook, which would cost
 * each request a pass through Fastify's hook runner. Fastify's own request lines stay off.
 */
class AccessLogController extends LogController {
  constructor(private readonly accessLog: AccessLog) {
    super({ disableRequestLogging: true, requestIdLogLabel: 'cid' });
  }

  override requestCompleted(_error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    this.accessLog(request.id, (request as unknown as { svcChannel?: string }).svcChannel, request.method, request.url, reply.statusCode, Math.round(reply.elapsedTime * 100) / 100);
  }
}

/**
 * Fastify does HTTP; routing, the hook chains and replies are the kernel's. Bodies are left
 * unread until a data format plugin asks for them, so authentication and rate limiting run
 * before a single body byte is read.
 */
export function buildHttp(deps: HttpDeps): FastifyInstance {
  const nextCid = cidGenerator();
  const requestTimeout = deps.server().request_timeout_ms;
  const app = Fastify({
    clientErrorHandler: clientErrorReply(nextCid, deps.log),
    frameworkErrors: frameworkErrorReply((request: FastifyRequest) => request.id, deps.log),
    // Fastify's default is no limit: a client that sends a body slowly would hold its connection for good.
    requestTimeout,
    http: listenerTimeouts(requestTimeout),
    loggerInstance: deps.log,
    // No child logger per request: most requests log one line. Exchange.log makes one on demand.
    childLoggerFactory: (logger: Logger) => logger,
    // One log line per request, with the channel in it, is written when Fastify reports the response finished.
    logController: deps.accessLog ? new AccessLogController(deps.accessLog) : new LogController({ disableRequestLogging: true, requestIdLogLabel: 'cid' }),
    genReqId: nextCid,
    requestIdHeader: false,
    // Requests that reach a route while closing are refused by serveChannel, with the CID and svc's body.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { maxParamLength: 2048 },
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;

  const pauses = new RefusalPauses();
  const drain = listenerDrain(app.server);
  // Shutdown: connections held after a refusal are read again now (what they hold is answered
  // 503 with `connection: close`), and every connection is closed once it has no request.
  app.addHook('preClose', (done) => {
    const readAgain = pauses.releaseAll();
    const closeQuiet = () => {
      drain.begin();
      done();
    };
    // A request waiting on a connection read again is read in the event loop's next poll. Until
    // then a connection whose refused request had no body counts as idle, and closing idle
    // connections would reset it with that request unread: the second check phase comes after a poll.
    if (readAgain === 0) closeQuiet();
    else setImmediate(() => setImmediate(closeQuiet));
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req: FastifyRequest, _payload: unknown, done: (err: Error | null, body?: unknown) => void) => done(null));

  // The CID header and, once shutdown began, `connection: close` are set where each answer is
  // made (the channel route, the two handlers below, sendDraft), not by onRequest and onSend
  // hooks: a hook costs every request a pass through Fastify's hook runner.
  app.setNotFoundHandler((request, reply) => {
    reply.header('x-svc-cid', request.id);
    if (deps.closing()) reply.header('connection', 'close');
    reply.code(ERRORS.NO_SUCH_URL.status).send(errorBody(request.id, ERRORS.NO_SUCH_URL.message));
  });

  app.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) deps.log.error({ cid: request.id, err: error }, 'request failed');
    // The failure may be a header Node refused while writing: none of the draft's headers go out again.
    for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name);
    reply.header('x-svc-cid', request.id);
    if (deps.closing()) reply.header('connection', 'close');
    reply.code(status >= 400 && status < 600 ? status : 500).send(errorBody(request.id, status < 500 ? error.message : 'Internal server error'));
  });

  app.route({
    method: [...HTTP_METHODS],
    url: '/*',
    exposeHeadRoute: false,
    handler: async function serveChannel(request, reply) {
      reply.header('x-svc-cid', request.id);
      if (deps.closing()) return reply.code(503).header('connection', 'close').send(errorBody(request.id, ERRORS.SHUTTING_DOWN.message));
      const { path, search } = splitUrl(request.url);
      const match = deps.router().match(request.method, path);
      if (!match) return reply.code(ERRORS.NO_SUCH_URL.status).send(errorBody(request.id, ERRORS.NO_SUCH_URL.message));
      const rt = match.runtime;
      (request as unknown as { svcChannel?: string }).svcChannel = rt.channel.name;
      const server = deps.server();
      const ex = new HttpExchange(request, reply, rt.channel, match.params, parseQuery(search), path, rt.channel.body_limit ?? server.body_limit, deps.trusted(), deps.closing);
      if (match.kind === 'method') await replyWithError(rt.onError, ex, new SvcError('METHOD_NOT_ALLOWED', undefined, { headers: { allow: match.allow } }));
      // The watch costs every request a little: only when a limit is set.
      else await runChain(rt, ex, server.step_timeout_ms > 0 ? deps.steps : undefined);
      if (!ex.replied) await replyWithError(rt.onError, ex, new SvcError('INTERNAL', 'No reply was produced'));
      // Last resort: whatever a step did, this request gets an answer (or, mid-body, loses its socket).
      if (!reply.sent && !ex.dropped) {
        if (reply.raw.headersSent) request.raw.socket.destroy();
        else throw new SvcError('INTERNAL', 'No reply was produced');
      }
      // A refused client that resends at once on its connection waits before its next request is read.
      if ((reply.statusCode === 429 || ex.refusal) && server.refusal_pause_ms > 0 && !deps.closing()) pauseRefused(pauses, request, reply, server.refusal_pause_ms, deps.trusted());
      for (const hook of rt.onResponse) {
        try {
          await hook(ex);
        } catch (err) {
          ex.log.warn({ err }, 'onResponse hook failed');
        }
      }
      return reply;
    },
  });
  return app;
}

/** Not for a trusted proxy's connection (`server.trusted_proxies`): it carries other clients' requests too. */
function pauseRefused(pauses: RefusalPauses, request: FastifyRequest, reply: FastifyReply, pauseMs: number, trusted: PeerFilter | undefined): void {
  const socket = request.raw.socket;
  if (trusted && trusted(socket.remoteAddress ?? '')) return;
  pauses.holdAfter(reply.raw, socket, pauseMs);
}
