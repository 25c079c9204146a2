import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { clientErrorReply, listenerTimeouts, ERRORS, errorBody, openApiDocument, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { Actor, AdminAuth } from './auth.ts';
import type { EndpointRegistry } from './endpoints.ts';
import { IssuesError } from './errors.ts';
import { adminOpenApi } from './openapi.ts';
import { listOps, runOp } from './ops.ts';
import { PAGE_HEADERS, type PageRegistry } from './pages.ts';
import type { AdminResources } from './resources.ts';
import { auditQuerySchema, importSchema, loginSchema } from './schema.ts';
import { clearedCookie, sessionCookie } from './sessions.ts';
import { readAudit } from './store.ts';
import { exportConfig } from './transfer.ts';

declare module 'fastify' {
  interface FastifyRequest {
    cid: string;
    actor: Actor;
  }
}

export interface AdminHttpDeps {
  kernel: KernelApi;
  auth: AdminAuth;
  resources: AdminResources;
  pages: PageRegistry;
  endpoints: EndpointRegistry;
  version: string;
}

const API = '/admin/api';
const PUBLIC = new Set([`${API}/login`]);

/** The admin listener's app: its own Fastify, apart from the channel listener. Every answer carries X-Svc-CID; errors are svc's body. */
export function buildAdminApp({ kernel, auth, resources, pages, endpoints, version }: AdminHttpDeps): FastifyInstance {
  const requestTimeout = kernel.server().request_timeout_ms;
  const app = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    // As on the channel listener: malformed and slow requests get svc's body with a CID, and slow ones a time limit.
    clientErrorHandler: clientErrorReply(() => kernel.newCid(), kernel.log),
    requestTimeout,
    http: listenerTimeouts(requestTimeout),
  });
  app.decorateRequest('cid', '');
  app.decorateRequest('actor', undefined as unknown as Actor);

  app.addHook('onRequest', async (req, reply) => {
    req.cid = kernel.newCid();
    void reply.header('X-Svc-CID', req.cid);
    void reply.header('Cache-Control', 'no-store');
    const path = req.url.split('?')[0]!;
    if (PUBLIC.has(path) || !path.startsWith(`${API}/`)) return;
    req.actor = await auth.identify({ method: req.method, address: addressOf(req), authorization: req.headers.authorization, cookie: req.headers.cookie, csrf: header(req, 'x-csrf-token') });
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => sendError(kernel, req, reply, err));
  app.setNotFoundHandler((req, reply) => sendError(kernel, req, reply, new SvcError('NO_SUCH_URL')));

  app.post(`${API}/login`, async (req, reply) => {
    const body = parse(loginSchema, req.body);
    const { token, session } = await auth.login(addressOf(req), body.password);
    void reply.header('Set-Cookie', sessionCookie(token, Math.floor((session.expiresAt - kernel.clock.now()) / 1000)));
    return { user: session.user, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
  });
  app.post(`${API}/logout`, async (req, reply) => {
    auth.logout(req.headers.cookie);
    void reply.header('Set-Cookie', clearedCookie());
    return reply.code(204).send();
  });
  app.get(`${API}/session`, async (req) => {
    const s = req.actor.session;
    if (!s) return { user: req.actor.who };
    return { user: s.user, csrfToken: s.csrfToken, expiresAt: new Date(s.expiresAt).toISOString() };
  });

  app.get(`${API}/resources`, async () => ({
    sections: resources.catalogue().map((s) => ({ ...s, count: resources.list(s.name).length, href: `${API}/resources/${s.name}` })),
  }));
  app.get<{ Params: { section: string } }>(`${API}/resources/:section`, async (req) => ({ items: resources.list(req.params.section) }));
  app.post<{ Params: { section: string } }>(`${API}/resources/:section`, async (req, reply) => {
    const { view } = await resources.upsert(req.params.section, undefined, req.body, req.actor.who, 'create');
    return reply.code(201).send(view);
  });
  app.get<{ Params: { section: string; name: string } }>(`${API}/resources/:section/:name`, async (req) => resources.get(req.params.section, req.params.name));
  app.put<{ Params: { section: string; name: string } }>(`${API}/resources/:section/:name`, async (req, reply) => {
    const { created, view } = await resources.upsert(req.params.section, req.params.name, req.body, req.actor.who, 'put');
    return reply.code(created ? 201 : 200).send(view);
  });
  app.delete<{ Params: { section: string; name: string } }>(`${API}/resources/:section/:name`, async (req, reply) => {
    await resources.remove(req.params.section, req.params.name, req.actor.who);
    return reply.code(204).send();
  });
  app.get(`${API}/overrides`, async () => ({ items: resources.overrides() }));
  app.delete<{ Params: { section: string; name: string } }>(`${API}/overrides/:section/:name`, async (req, reply) => {
    await resources.removeOverride(req.params.section, req.params.name, req.actor.who);
    return reply.code(204).send();
  });

  app.get(`${API}/ops`, async () => ({ items: listOps(kernel) }));
  app.post<{ Params: { op: string } }>(`${API}/ops/:op`, async (req) => ({ result: (await runOp(kernel, req.params.op, req.body, req.actor.who)) ?? null }));

  app.get(`${API}/audit`, async (req) => ({ items: await readAudit(kernel.store, parse(auditQuerySchema, req.query)) }));
  app.get(`${API}/export`, async (_req, reply) => reply.type('application/yaml; charset=utf-8').send(exportConfig(kernel, resources.catalogue()).yaml));
  app.post(`${API}/import`, async (req) => resources.importSections(parse(importSchema, req.body), req.actor.who));
  app.get(`${API}/openapi.json`, async () => adminOpenApi(kernel, resources.catalogue(), version));
  // The Dashboard's "interface specification" download: what the channel listener serves, its channels (when
  // the channels-openapi plugin is on) and the enabled plugins' routes.
  app.get(`${API}/spec/openapi.json`, async () => {
    const channels = kernel.lookup('openapi.channels')?.fragment();
    const description = 'The HTTP interface this server offers its clients: its channels, the pub/sub REST APIs and other plugin routes.';
    return openApiDocument({ title: 'svc interface specification', version, description }, [...(channels ? [channels] : []), ...kernel.openApiFragments()], { basicAuth: { type: 'http', scheme: 'basic' } });
  });
  app.get(`${API}/spec/channels.json`, async () => {
    const channels = kernel.lookup('openapi.channels');
    if (!channels) throw new SvcError('NO_SUCH_URL', 'The channels-openapi plugin is not enabled');
    return channels.document();
  });

  // Pages (the Dashboard): public markup and code; what they show comes from the API above.
  app.get('/admin', async (_req, reply) => reply.redirect('/admin/'));
  app.get('/admin/*', async (req, reply) => {
    const page = req.url.startsWith(`${API}/`) ? undefined : pages.get(req.url.split('?')[0]!);
    if (!page) throw new SvcError('NO_SUCH_URL');
    for (const [k, v] of Object.entries(PAGE_HEADERS)) void reply.header(k, v);
    return reply.type(page.contentType).send(page.body);
  });
  // Other plugins' endpoints (metrics, probes): outside /admin/, so the API's login does not apply; each checks its own callers.
  app.get('/*', async (req, reply) => {
    const endpoint = endpoints.get(req.url.split('?')[0]!);
    if (!endpoint) throw new SvcError('NO_SUCH_URL');
    const answer = await endpoint({ cid: req.cid, headers: req.headers });
    return reply.code(answer.status).type(answer.contentType).send(answer.body);
  });
  return app;
}

function parse<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, value: unknown): T {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  throw new IssuesError('INVALID_INPUT', 'Invalid request', parsed.error.issues.map((i) => ({ path: i.path as (string | number)[], message: i.message })));
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The admin listener has no proxies in front by design (loopback): the peer is the client. */
function addressOf(req: FastifyRequest): string {
  return req.socket.remoteAddress ?? 'unknown';
}

function sendError(kernel: KernelApi, req: FastifyRequest, reply: FastifyReply, err: Error & { statusCode?: number; code?: string }): FastifyReply {
  let status: number;
  let details: string;
  if (err instanceof SvcError) {
    status = err.status;
    details = err.details;
    for (const [k, v] of Object.entries(err.headers ?? {})) void reply.header(k, v);
  } else if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    // Fastify's own refusals: unreadable JSON, a body over the limit, an unsupported content type.
    status = err.statusCode;
    details = status === 413 ? ERRORS.PAYLOAD_TOO_LARGE.message : status === 415 ? ERRORS.UNSUPPORTED_MEDIA_TYPE.message : ERRORS.MALFORMED_BODY.message;
  } else {
    status = 500;
    details = ERRORS.INTERNAL.message;
    kernel.log.error({ cid: req.cid, err }, 'admin API: unexpected failure');
  }
  const body: Record<string, unknown> = errorBody(req.cid || kernel.newCid(), details);
  if (err instanceof IssuesError) body.issues = err.issues;
  if (!reply.hasHeader('X-Svc-CID')) void reply.header('X-Svc-CID', body.cid as string);
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}
