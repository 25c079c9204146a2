import type { z } from 'zod';
import { hmac, signatureMatches } from '../../sdk/plugin/signature.ts';
import { SvcError } from '../../kernel/errors.ts';
import { BadRequest, ServiceError, errorOfKind } from '../../sdk/errors.ts';
import { callArgs } from '../../plugins/outgoing/rest/call.ts';
import { pathBuilder, type Params } from '../../plugins/outgoing/rest/url.ts';
import { publishArgs } from '../../plugins/pubsub/engine/plugin.ts';
import { hmacArgs, verifyArgs } from '../../plugins/secrets/named/host-calls.ts';
import { invokeAsyncArgs } from '../../plugins/delivery/use-queue/plugin.ts';
import { invokeArgs, type InvokeReply } from '../../kernel/services/invoke.ts';
import { toBase64 } from '../../sdk/internal/bytes.ts';
import { getArgs, incrArgs, setArgs } from '../../plugins/cache/named/host-calls.ts';
import { MemoryCache } from '../../plugins/cache/shared/memory.ts';
import { systemClock } from '../../kernel/platform/clock.ts';
import { publishArgs as amqpPublishArgs } from '../../plugins/connectors/amqp/publish.ts';
import { publishArgs as mqttPublishArgs } from '../../plugins/connectors/mqtt/publish.ts';
import type { AmqpPublished, FakeAnswer, FakeConnection, FakeHandler, Fakes, InvokedCall, MqttPublication, OutgoingRequest, Publication, QueuedCall, SqlQuery } from '../../sdk/testing/index.ts';
import { queryArgs, transactionArgs } from '../../plugins/connectors/sql/host-calls.ts';
import { fakeSqlAnswer } from './sql-fakes.ts';
import { getArgs as sftpGetArgs, pathArgs as sftpPathArgs, putArgs as sftpPutArgs, renameArgs as sftpRenameArgs } from '../../plugins/connectors/sftp/host-calls.ts';
import { FakeSftpFolder } from './sftp-fakes.ts';
import { sendArgs as mailSendArgs } from '../../plugins/connectors/smtp/message.ts';
import type { MailSentRecord } from '../../sdk/testing/index.ts';
import { fakeMailSend } from './mail-fakes.ts';

/**
 * The host side of a service's host calls under `svc test`: the arguments are checked with the
 * same schemas as in production, then fakes answer and record. A call nothing fakes is refused
 * to the service and reported to the test (`problems`), which then fails: a service must not
 * reach a real system from a test, and a forgotten fake should say so rather than time out.
 */
export class FakeHost {
  readonly requests: OutgoingRequest[] = [];
  readonly published: Publication[] = [];
  readonly amqpPublished: AmqpPublished[] = [];
  readonly queued: QueuedCall[] = [];
  readonly invoked: InvokedCall[] = [];
  readonly queries: SqlQuery[] = [];
  readonly mqttPublished: MqttPublication[] = [];
  readonly mailSent: MailSentRecord[] = [];
  /** What the service asked for that no fake answers, since the last call began. */
  problems: string[] = [];
  private count = 0;
  /** Named caches by name, made on first use: any name works in a test, and starts with `fakes.caches` entries. */
  private caches = new Map<string, MemoryCache>();
  /** Faked SFTP folders by connection, made from `fakes.sftp` on first use. */
  private sftpFolders = new Map<string, FakeSftpFolder>();

  constructor(
    private readonly service: string,
    private readonly fakes: Fakes,
    /** Builds a connection's request path as production does, from the project's config when it names the connection. */
    private readonly pathOf: (connection: string) => (params: Params | undefined) => string,
  ) {}

  forget(): void {
    this.requests.length = 0;
    this.published.length = 0;
    this.amqpPublished.length = 0;
    this.queued.length = 0;
    this.invoked.length = 0;
    this.queries.length = 0;
    this.mqttPublished.length = 0;
    this.mailSent.length = 0;
    this.problems = [];
    this.caches.clear();
    this.sftpFolders.clear();
  }

  /** The faked SFTP folder of a connection; a connection with no fake fails the test. */
  sftpFolder(connection: string): FakeSftpFolder {
    let folder = this.sftpFolders.get(connection);
    if (!folder) {
      const fake = this.fakes.sftp?.[connection];
      if (fake === undefined) throw new Refused(`${this.service} used the SFTP connection '${connection}', which has no fake: add sftp: { '${connection}': {} } to testService('${this.service}', …)`);
      folder = new FakeSftpFolder(fake);
      this.sftpFolders.set(connection, folder);
    }
    return folder;
  }

  /** Answers one host call with its reply envelope (JSON), as kernel/services/host-calls.ts does. */
  async answer(op: string, argsJson: string): Promise<string> {
    const handler = this.handlers[op];
    if (!handler) return this.refuse(`${this.service} made the host call '${op.slice(0, 100)}', which svc test does not fake`);
    let args: unknown;
    try {
      args = handler.args.parse(JSON.parse(argsJson));
    } catch (err) {
      return fail('Error', 500, `invalid arguments for ${op}: ${(err as Error).message.slice(0, 500)}`);
    }
    try {
      return JSON.stringify({ ok: true, value: (await handler.run(args as never)) ?? null });
    } catch (err) {
      if (err instanceof Refused) return this.refuse(err.message);
      if (err instanceof ServiceError) return fail(err.kind, err.status, err.message);
      if (err instanceof SvcError) return fail('Error', err.status, err.details);
      return this.refuse(`a fake of ${this.service} threw: ${(err as Error)?.stack ?? String(err)}`);
    }
  }

  private refuse(problem: string): string {
    this.problems.push(problem);
    return fail('Error', 500, problem);
  }

  private readonly handlers: Record<string, { args: z.ZodType; run: (args: never) => Promise<unknown> }> = {
    'outgoing.call': { args: callArgs, run: (args: z.infer<typeof callArgs>) => this.outgoing(args) },
    'pubsub.publish': { args: publishArgs, run: async (args: z.infer<typeof publishArgs>) => this.publish(args) },
    'secrets.hmac': { args: hmacArgs, run: async (a: z.infer<typeof hmacArgs>) => hmac(a.algorithm, this.secret(a.name), a.data).toString(a.encoding) },
    'secrets.verifyHmac': { args: verifyArgs, run: async (a: z.infer<typeof verifyArgs>) => signatureMatches(hmac(a.algorithm, this.secret(a.name), a.data), a.signature, a.encoding) },
    'cache.get': { args: getArgs, run: async (a: z.infer<typeof getArgs>) => this.cache(a.name).get(a.key) ?? null },
    'cache.set': { args: setArgs, run: async (a: z.infer<typeof setArgs>) => void this.cache(a.name).set(a.key, JSON.stringify(a.value), a.ttlMs ?? HOUR) },
    'cache.delete': { args: getArgs, run: async (a: z.infer<typeof getArgs>) => this.cache(a.name).delete(a.key) },
    'cache.incr': {
      args: incrArgs,
      run: async (a: z.infer<typeof incrArgs>) => {
        try {
          return this.cache(a.name).incr(a.key, a.by, a.ttlMs ?? HOUR);
        } catch (err) {
          // As the host answers it: the service sees a BadRequest.
          if (err instanceof SvcError && err.code === 'BAD_REQUEST') throw new BadRequest(err.details);
          throw err;
        }
      },
    },
    'queue.invokeAsync': {
      args: invokeAsyncArgs,
      run: async (a: z.infer<typeof invokeAsyncArgs>) => {
        const cid = `queued-${++this.count}`;
        this.queued.push({ service: a.service, input: a.input, cid });
        return { cid };
      },
    },
    'amqp.publish': { args: amqpPublishArgs, run: async (a: z.infer<typeof amqpPublishArgs>) => this.amqpPublish(a) },
    'service.invoke': { args: invokeArgs, run: (a: z.infer<typeof invokeArgs>) => this.invoke(a) },
    'sql.query': { args: queryArgs, run: (a: z.infer<typeof queryArgs>) => this.sql({ connection: a.connection, text: a.text, params: a.params ?? [] }) },
    'sql.transaction': { args: transactionArgs, run: (a: z.infer<typeof transactionArgs>) => this.sqlTransaction(a) },
    'sftp.put': { args: sftpPutArgs, run: async (a: z.infer<typeof sftpPutArgs>) => asServiceError(() => this.sftpFolder(a.connection).put(a)) },
    'sftp.get': { args: sftpGetArgs, run: async (a: z.infer<typeof sftpGetArgs>) => asServiceError(() => this.sftpFolder(a.connection).get(a)) },
    'sftp.list': { args: sftpPathArgs, run: async (a: z.infer<typeof sftpPathArgs>) => asServiceError(() => this.sftpFolder(a.connection).list(a)) },
    'sftp.stat': { args: sftpPathArgs, run: async (a: z.infer<typeof sftpPathArgs>) => asServiceError(() => this.sftpFolder(a.connection).stat(a)) },
    'sftp.rename': { args: sftpRenameArgs, run: async (a: z.infer<typeof sftpRenameArgs>) => asServiceError(() => this.sftpFolder(a.connection).rename(a)) },
    'sftp.delete': { args: sftpPathArgs, run: async (a: z.infer<typeof sftpPathArgs>) => asServiceError(() => this.sftpFolder(a.connection).delete(a)) },
    'sftp.mkdir': { args: sftpPathArgs, run: async (a: z.infer<typeof sftpPathArgs>) => asServiceError(() => this.sftpFolder(a.connection).mkdir(a)) },
    'mqtt.publish': { args: mqttPublishArgs, run: async (a: z.infer<typeof mqttPublishArgs>) => this.mqttPublish(a) },
    'mail.send': { args: mailSendArgs, run: async (a: z.infer<typeof mailSendArgs>) => this.mailSend(a) },
  };

  /** A mail sent (or queued) on a faked SMTP connection: checked as the host checks it, then recorded. */
  private mailSend(a: z.infer<typeof mailSendArgs>): unknown {
    const sent = fakeMailSend(this.fakes.mail?.[a.connection], a, ++this.count);
    if (sent === 'no fake') throw new Refused(`${this.service} sent mail on the SMTP connection '${a.connection}', which has no fake: add mail: { '${a.connection}': true } to testService('${this.service}', …)`);
    this.mailSent.push(sent.record);
    return sent.answer;
  }

  /** One statement answered by the connection's fake: its result, or the `failed` answer of a SqlError it threw. */
  private async sql(query: SqlQuery): Promise<unknown> {
    this.queries.push(query);
    const where = query.statement === undefined ? '' : ` (statement ${query.statement} of a transaction)`;
    const answer = await fakeSqlAnswer(this.fakes.sql?.[query.connection], query);
    if (answer === 'no fake') throw new Refused(`${this.service} ran SQL on '${query.connection}'${where}, which has no fake: add sql: { '${query.connection}': … } to testService('${this.service}', …)`);
    if (answer === 'no answer') throw new Refused(`${this.service} ran ${JSON.stringify(query.text.slice(0, 200))} on '${query.connection}'${where}, which its fake does not answer`);
    return answer;
  }

  /** The statements in order; the first that fails ends the transaction, as on the host. */
  private async sqlTransaction(args: z.infer<typeof transactionArgs>): Promise<unknown> {
    const results: unknown[] = [];
    for (const [statement, s] of args.statements.entries()) {
      const answer = (await this.sql({ connection: args.connection, text: s.text, params: s.params ?? [], statement })) as { failed?: { code: string; message: string } };
      if (answer.failed) return { failed: { ...answer.failed, statement } };
      results.push(answer);
    }
    return { results };
  }

  /** Answers as the kernel's service.invoke does (kernel/services/invoke.ts), from the fake of the service invoked. */
  private async invoke(args: z.infer<typeof invokeArgs>): Promise<InvokeReply> {
    const call: InvokedCall = { service: args.service, input: args.input, method: args.method ?? 'POST' };
    if (args.timeoutMs !== undefined) call.timeoutMs = args.timeoutMs;
    this.invoked.push(call);
    const fake = this.fakes.invoke?.[args.service];
    if (fake === undefined) throw new Refused(`${this.service} invoked '${args.service}', which has no fake: add invoke: { '${args.service}': { returns: … } } to testService('${this.service}', …)`);
    let value: unknown;
    try {
      if (typeof fake === 'function') value = await fake(call);
      else if ('throws' in fake) throw fake.throws;
      else value = fake.returns;
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return { failed: { kind: err.kind, status: err.status, message: err.message, code: err.code, issues: err.issues } };
    }
    return value instanceof Uint8Array ? { bytes: toBase64(value) } : { value };
  }

  /** A fake named cache: this service's alone, in memory, on the real clock, with the default ttl of an hour. */
  private cache(name: string): MemoryCache {
    let cache = this.caches.get(name);
    if (cache === undefined) {
      cache = new MemoryCache({ maxEntries: 100_000, maxBytes: 256 * 1024 * 1024 }, systemClock);
      for (const [key, value] of Object.entries(this.fakes.caches?.[name] ?? {})) cache.set(key, JSON.stringify(value), HOUR);
      this.caches.set(name, cache);
    }
    return cache;
  }

  private secret(name: string): string {
    const value = this.fakes.secrets?.[name];
    if (value === undefined) throw new Refused(`${this.service} used the named secret '${name}', which has no fake value: add secrets: { '${name}': '…' } to testService('${this.service}', …)`);
    return value;
  }

  private amqpPublish(args: z.infer<typeof amqpPublishArgs>): null {
    const fake = this.fakes.amqp?.[args.connection];
    if (fake === undefined) throw new Refused(`${this.service} published on the AMQP connection '${args.connection}', which has no fake: add amqp: { '${args.connection}': true } to testService('${this.service}', …)`);
    const published: AmqpPublished = { connection: args.connection, exchange: args.exchange, routingKey: args.routingKey, message: args.message, options: args.options };
    if (typeof fake === 'function') fake(published);
    this.amqpPublished.push(published);
    return null;
  }

  private publish(args: z.infer<typeof publishArgs>): { msg_id: string } {
    const o = args.opts;
    const options: Publication['options'] = { priority: o.priority, hasGd: o.has_gd, mimeType: o.mime_type };
    if (o.expiration !== undefined) options.expiration = o.expiration;
    if (o.correl_id !== undefined) options.correlId = o.correl_id;
    if (o.in_reply_to !== undefined) options.inReplyTo = o.in_reply_to;
    if (o.ext_client_id !== undefined) options.extClientId = o.ext_client_id;
    const publication: Publication = { topic: args.topic, data: args.data, options };
    this.fakes.publish?.(publication);
    this.published.push(publication);
    return { msg_id: `fake-${++this.count}` };
  }

  /** Records an MQTT publish on a faked connection (as production, a message that is not a string is sent as JSON). */
  private mqttPublish(a: z.infer<typeof mqttPublishArgs>): null {
    const fake = this.fakes.mqtt?.[a.connection];
    if (fake === undefined) throw new Refused(`${this.service} published to MQTT connection '${a.connection}', which has no fake: add mqtt: { '${a.connection}': {} } to testService('${this.service}', …)`);
    const message: MqttPublication = { connection: a.connection, topic: a.topic, message: a.message, qos: a.options.qos, retain: a.options.retain };
    if (a.options.properties) message.properties = a.options.properties;
    fake.publish?.(message);
    this.mqttPublished.push(message);
    return null;
  }

  private async outgoing(args: z.infer<typeof callArgs>): Promise<unknown> {
    const fake = this.fakes.outgoing?.[args.connection];
    const path = this.pathOf(args.connection)(args.params);
    const request: OutgoingRequest = { connection: args.connection, method: args.method, path, params: args.params ?? {}, payload: args.payload, headers: args.headers ?? {} };
    this.requests.push(request);
    const call = `${args.method} ${path} on '${args.connection}'`;
    if (fake === undefined) throw new Refused(`${this.service} called ${call}, which has no fake: add outgoing: { '${args.connection}': … } to testService('${this.service}', …)`);
    const answer = pick(fake, args.method, path.split('?')[0]!);
    if (!answer) throw new Refused(`${this.service} called ${call}, which no route of its fake answers (routes: ${Object.keys(fake).join(', ')})`);
    const given = typeof answer === 'function' ? await answer(request) : answer;
    if ('fail' in given) return { failed: { kind: given.fail, message: given.message ?? `${given.fail} (a fake failure)`, attempts: 1 } };
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(given.headers ?? {})) headers[k.toLowerCase()] = v;
    const body = given.body;
    if (body !== undefined && typeof body !== 'string') headers['content-type'] ??= 'application/json';
    return { status: given.status ?? 200, headers, text: body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body) };
  }
}

class Refused extends Error {}

const KIND_OF: Record<string, string> = { BAD_REQUEST: 'BadRequest', NOT_FOUND: 'NotFound', CONFLICT: 'Conflict', FORBIDDEN: 'Forbidden', PAYLOAD_TOO_LARGE: 'PayloadTooLarge' };

/** An SvcError of a fake as the kernel passes it to services: the SDK error of its kind. */
function asServiceError<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof SvcError && KIND_OF[err.code]) throw errorOfKind(KIND_OF[err.code]!, err.status, err.details);
    throw err;
  }
}

const HOUR = 3_600_000;

const ANSWER_KEYS = new Set(['status', 'body', 'headers', 'fail', 'message']);

/** The answer of a fake for a call: the fake itself, or its most specific route. */
function pick(fake: FakeConnection, method: string, path: string): FakeAnswer | FakeHandler | undefined {
  if (typeof fake === 'function') return fake;
  const keys = Object.keys(fake);
  if (keys.every((k) => ANSWER_KEYS.has(k))) return fake as FakeAnswer;
  const routes = fake as Record<string, FakeAnswer | FakeHandler>;
  return routes[`${method} ${path}`] ?? routes[method] ?? routes['*'];
}

function fail(kind: string, status: number, message: string): string {
  return JSON.stringify({ ok: false, error: { kind, status, message } });
}

/** Request paths of the project's outgoing connections (by name), as production builds them; `/` plus the query for others. */
export function outgoingPaths(connections: Array<{ name?: unknown; address?: unknown; url_path?: unknown }>): (connection: string) => (params: Params | undefined) => string {
  const built = new Map<string, (params: Params | undefined) => string>();
  for (const c of connections) {
    if (typeof c.name !== 'string' || typeof c.address !== 'string') continue;
    try {
      built.set(c.name, pathBuilder(c.address, typeof c.url_path === 'string' ? c.url_path : ''));
    } catch {
      // An address the config check would refuse: the connection gets the default path.
    }
  }
  const bare = pathBuilder('http://fake.invalid', '/');
  return (connection) => built.get(connection) ?? bare;
}
