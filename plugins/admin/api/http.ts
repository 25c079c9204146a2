import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { clientErrorReply, frameworkErrorReply, listenerDrain, listenerTimeouts, type FrameworkReply, ERRORS, errorBody, openApiDocument, SvcError, type KernelApi } from '../../../sdk/plugin/index.ts';
import type { AdminAccounts } from './accounts.ts';
import type { Actor, AdminAuth } from './auth.ts';
import type { EndpointRegistry } from './endpoints.ts';
import { IssuesError } from './errors.ts';
import { adminOpenApi } from './openapi.ts';
import { listOps, runOp } from './ops.ts';
import { PAGE_HEADERS, type PageRegistry } from './pages.ts';
import type { AdminResources } from './resources.ts';
import { ADMIN_ROUTES, checkAccess, fastifyPath, routeKey, type AdminRoute } from './routes.ts';
import { auditQuerySchema, importSchema, loginSchema, newKeySchema, newUserSchema } from './schema.ts';
import { clearedCookie, sessionCookie } from './sessions.ts';
import { specUnder } from './spec.ts';
import { readAudit } from './store.ts';
import { exportConfig } from './transfer.ts';
import { tenantUsage } from './usage.ts';

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
  accounts: AdminAccounts;
  pages: PageRegistry;
  endpoints: EndpointRegistry;
  version: string;
}

const API = '/admin/api';
const PUBLIC = new Set(ADMIN_ROUTES.filter((r) => r.access === 'public').map((r) => `${API}${r.path}`));

type Params = { section: string; name: string; op: string };
type Handler = (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => Promise<unknown>;

/** The admin listener's app: its own Fastify, apart from the channel listener. Every answer carries X-Svc-CID; errors are svc's body. */
export function buildAdminApp(deps: AdminHttpDeps): FastifyInstance {
  const { kernel, auth, pages, endpoints } = deps;
  const requestTimeout = kernel.server().request_timeout_ms;
  const badUrl = frameworkErrorReply(() => kernel.newCid(), kernel.log);
  const app = Fastify({
    logger: false,
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    // As on the channel listener: malformed and slow requests get svc's body with a CID, and slow ones a time limit.
    clientErrorHandler: clientErrorReply(() => kernel.newCid(), kernel.log),
    frameworkErrors: (err, req, reply) => badUrl(err, req, reply as unknown as FrameworkReply),
    requestTimeout,
    http: listenerTimeouts(requestTimeout),
  });
  // Shutdown ends once the last answer is out, not when a browser's spare connection times out.
  const drain = listenerDrain(app.server);
  app.addHook('preClose', (done) => {
    drain.begin();
    done();
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

  const handlers = apiHandlers(deps);
  for (const route of ADMIN_ROUTES) {
    const handler = handlers.get(routeKey(route));
    if (!handler) throw new Error(`admin API: no handler for ${routeKey(route)}`);
    handlers.delete(routeKey(route));
    app.route<{ Params: Params }>({ method: route.method, url: `${API}${fastifyPath(route.path)}`, preHandler: async (req) => guard(deps, route, req), handler });
  }
  if (handlers.size) throw new Error(`admin API: handlers without a route in ADMIN_ROUTES: ${[...handlers.keys()].join(', ')}`);

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

/** Before a handler: the section and name the path gives, resolved for the caller (404 for another tenant's), then the role's access (403). */
async function guard({ resources, accounts }: AdminHttpDeps, route: AdminRoute, req: FastifyRequest<{ Params: Params }>): Promise<void> {
  if (route.access === 'public') return;
  const p = req.actor;
  const params = req.params;
  // An override may outlive its plugin's section: the platform can still remove it.
  if (params.section !== undefined && (p.tenant !== undefined || route.path.startsWith('/resources/'))) resources.requireSection(params.section, p);
  if (params.name !== undefined) {
    if (route.path.startsWith('/users/')) params.name = accounts.resolve(p, 'user', params.name);
    else if (route.path.startsWith('/keys/')) params.name = accounts.resolve(p, 'key', params.name);
    else params.name = resources.resolve(p, params.section, params.name);
  }
  checkAccess(route, p);
}

/** One handler per row of ADMIN_ROUTES, by `METHOD /path`. */
function apiHandlers({ kernel, auth, resources, accounts, version }: AdminHttpDeps): Map<string, Handler> {
  const handlers = new Map<string, Handler>();
  const on = (key: string, handler: Handler) => void handlers.set(key, handler);
  const grantView = <T extends { tenant: string | undefined }>(g: T) => ({ ...g, tenant: g.tenant ?? null });

  on('POST /login', async (req, reply) => {
    const body = parse(loginSchema, req.body);
    const { token, session } = await auth.login(addressOf(req), body.username, body.password);
    void reply.header('Set-Cookie', sessionCookie(token, Math.floor((session.expiresAt - kernel.clock.now()) / 1000)));
    return { user: session.user, role: session.role, tenant: session.tenant ?? null, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
  });
  on('POST /logout', async (req, reply) => {
    auth.logout(req.headers.cookie);
    void reply.header('Set-Cookie', clearedCookie());
    return reply.code(204).send();
  });
  on('GET /session', async (req) => {
    const { who, role, tenant, session } = req.actor;
    if (!session) return { user: who, role, tenant: tenant ?? null };
    return { user: session.user, role, tenant: tenant ?? null, csrfToken: session.csrfToken, expiresAt: new Date(session.expiresAt).toISOString() };
  });

  on('GET /resources', async (req) => ({
    sections: resources.catalogue(req.actor).map((s) => ({ ...s, count: resources.list(s.name, req.actor).length, href: `${API}/resources/${s.name}` })),
  }));
  on('GET /resources/{section}', async (req) => ({ items: await resources.listShown(req.params.section, req.actor) }));
  on('POST /resources/{section}', async (req, reply) => {
    const { view } = await resources.upsert(req.params.section, undefined, req.body, req.actor, 'create');
    return reply.code(201).send(view);
  });
  on('GET /resources/{section}/{name}', async (req) => resources.getShown(req.params.section, req.params.name, req.actor));
  on('PUT /resources/{section}/{name}', async (req, reply) => {
    const { created, view } = await resources.upsert(req.params.section, req.params.name, req.body, req.actor, 'put');
    return reply.code(created ? 201 : 200).send(view);
  });
  on('DELETE /resources/{section}/{name}', async (req, reply) => {
    await resources.remove(req.params.section, req.params.name, req.actor);
    return reply.code(204).send();
  });
  on('GET /overrides', async (req) => ({ items: resources.overrides(req.actor) }));
  on('DELETE /overrides/{section}/{name}', async (req, reply) => {
    await resources.removeOverride(req.params.section, req.params.name, req.actor);
    return reply.code(204).send();
  });

  on('GET /ops', async (req) => ({ items: listOps(kernel, req.actor) }));
  on('POST /ops/{op}', async (req) => ({ result: (await runOp(kernel, resources.scope, req.params.op, req.body, req.actor)) ?? null }));

  on('GET /audit', async (req) => {
    const query = parse(auditQuerySchema, req.query);
    const own = req.actor.tenant;
    if (own !== undefined && query.tenant !== undefined && query.tenant !== own) return { items: [] };
    return { items: await readAudit(kernel.store, { ...query, tenant: own ?? query.tenant }) };
  });
  on('GET /usage', async (req) => tenantUsage(kernel, req.actor));
  on('GET /export', async (req, reply) => {
    const { raw, sections } = resources.exportable(req.actor);
    return reply.type('application/yaml; charset=utf-8').send(exportConfig(raw, sections).yaml);
  });
  on('POST /import', async (req) => resources.importSections(parse(importSchema, req.body), req.actor));
  on('GET /openapi.json', async (req) => adminOpenApi(kernel, resources.catalogue(req.actor), version, req.actor));
  // The Dashboard's "interface specification" download: what the channel listener serves, its channels (when
  // the channels-openapi plugin is on) and the enabled plugins' routes; for a tenant, its channels only.
  const forCaller = (req: FastifyRequest, doc: Record<string, unknown>) => (req.actor.tenant === undefined ? doc : specUnder(doc, resources.scope.urlPrefix(req.actor.tenant)));
  on('GET /spec/openapi.json', async (req) => {
    const channels = kernel.lookup('openapi.channels')?.fragment();
    const description = 'The HTTP interface this server offers its clients: its channels, the pub/sub REST APIs and other plugin routes.';
    return forCaller(req, openApiDocument({ title: 'svc interface specification', version, description }, [...(channels ? [channels] : []), ...kernel.openApiFragments()], { basicAuth: { type: 'http', scheme: 'basic' } }));
  });
  on('GET /spec/channels.json', async (req) => {
    const channels = kernel.lookup('openapi.channels');
    if (!channels) throw new SvcError('NO_SUCH_URL', 'The channels-openapi plugin is not enabled');
    return forCaller(req, channels.document() as Record<string, unknown>);
  });

  on('GET /users', async (req) => ({ items: (await accounts.users(req.actor)).map(grantView) }));
  on('POST /users', async (req, reply) => reply.code(201).send(grantView(await accounts.addUser(req.actor, parse(newUserSchema, req.body)))));
  on('DELETE /users/{name}', async (req, reply) => {
    await accounts.deleteUser(req.actor, req.params.name);
    return reply.code(204).send();
  });
  on('GET /keys', async (req) => ({ items: (await accounts.keys(req.actor)).map(grantView) }));
  on('POST /keys', async (req, reply) => reply.code(201).send(grantView(await accounts.addKey(req.actor, parse(newKeySchema, req.body)))));
  on('DELETE /keys/{name}', async (req, reply) => {
    await accounts.deleteKey(req.actor, req.params.name);
    return reply.code(204).send();
  });
  return handlers;
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
