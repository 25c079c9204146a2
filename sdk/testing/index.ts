/**
 * Tests for services, run by `svc test`. A test file sits beside its service
 * (`services/orders.test.ts`) and runs in Node; the service it tests runs in the sandbox, as in
 * production, with its outgoing connections, SQL connections, publications, named secrets, named caches, background
 * calls and the services it invokes answered by fakes that record what it did.
 *
 *   import { testService, test, expect } from 'svc/sdk/testing';
 *
 *   const orders = testService('orders', {
 *     outgoing: { inventory: { 'GET /stock/pen': { body: { available: 3 } } } },
 *   });
 *
 *   test('reserves stock and announces the order', async () => {
 *     const res = await orders.post({ item: 'pen', qty: 2 });
 *     expect(res.status).toBe(201);
 *     expect(orders.published).toMatchObject([{ topic: '/orders/created', data: { item: 'pen' } }]);
 *   });
 *
 * Like the services' SDK, this file uses no Node API: editors of a directory made by `svc init`
 * type-check tests with the same settings as services.
 */
import type { Delivery, User } from '../context.ts';
import { errorOfKind, type ServiceError } from '../errors.ts';
import type { OutgoingFailureKind, ParamValue } from '../outgoing.ts';
import type { SqlField } from '../sql.ts';

export { expect, type Expectation } from './expect.ts';

/** What a fake outgoing connection answers: a response (status 200 unless given), or no response at all. */
export type FakeAnswer =
  | {
      status?: number;
      /** An object or array is sent as JSON (content-type application/json); a string as it is. */
      body?: unknown;
      headers?: Record<string, string>;
    }
  /** The call gets no response: the service's `OutgoingError` with this kind (`gatewayError` maps it to 502/503/504). */
  | { fail: OutgoingFailureKind; message?: string };

/** A request a service made on an outgoing connection, as its fake received it. */
export interface OutgoingRequest {
  connection: string;
  /** Upper case. */
  method: string;
  /**
   * The request path: the connection's `url_path` of the config (when the project's config has
   * the connection) with its `{placeholders}` filled from params, then the other params as the
   * query string, as svc builds it in production.
   */
  path: string;
  params: Record<string, ParamValue | ParamValue[]>;
  payload: unknown;
  headers: Record<string, string>;
}

export type FakeHandler = (request: OutgoingRequest) => FakeAnswer | Promise<FakeAnswer>;

/**
 * A fake outgoing connection: one answer (or function) for every call, or answers by route:
 * `'GET'`, `'GET /customers/42'` (the path without its query string) or `'*'`; the most specific
 * key wins. A call no key matches fails the test, as does a call on a connection with no fake.
 */
export type FakeConnection = FakeAnswer | FakeHandler | { [route: string]: FakeAnswer | FakeHandler };

/** A statement a service ran on a SQL connection (`sql(name).query`, or one of a `transaction`), as its fake received it. */
export interface SqlQuery {
  connection: string;
  text: string;
  /** As sent: bytes as `{ $bytes: base64 }`, dates as ISO text, arrays and objects as they are. */
  params: unknown[];
  /** Its index in a `transaction`; undefined for a `query`. */
  statement?: number;
}

/**
 * What a fake SQL statement answers: its rows (rowCount = their number, fields from the first
 * row's keys, typed 'unknown'), or a full result. To fail, a fake throws a `SqlError` (from
 * svc/sdk: `new SqlError('crm', '23505', 'duplicate key')`), which the service receives as such.
 */
export type FakeSqlAnswer = Array<Record<string, unknown>> | { rows?: Array<Record<string, unknown>>; rowCount?: number; fields?: SqlField[] };
export type FakeSqlHandler = (query: SqlQuery) => FakeSqlAnswer | Promise<FakeSqlAnswer>;
/**
 * A fake SQL connection: a function of every statement, or answers by exact statement text. A
 * statement it does not answer fails the test, as does a connection with no fake.
 */
export type FakeSqlConnection = FakeSqlHandler | { [text: string]: FakeSqlAnswer | FakeSqlHandler };

/** A message the service published (`publish(topic, data, options)`), with its options as svc applies them. */
export interface Publication {
  topic: string;
  data: unknown;
  options: { priority: number; hasGd: boolean; mimeType: string; expiration?: number; correlId?: string; inReplyTo?: string; extClientId?: string };
}

/** A message the service published on an AMQP connection (`amqp(name).publish(...)`), as svc would send it. */
export interface AmqpPublished {
  connection: string;
  exchange: string;
  routingKey: string;
  /** As the service passed it (a string, or a JSON value sent as JSON). */
  message: unknown;
  /** With svc's defaults applied (persistent: true). */
  options: { persistent: boolean; headers?: Record<string, string | number | boolean>; correlationId?: string; messageId?: string; contentType?: string; type?: string; expiration?: number; priority?: number };
}

/**
 * A fake AMQP connection: `true` accepts (confirms) every publish, a function sees each one
 * first and may throw an SDK error (`new ServiceUnavailable()`) to make `publish` fail.
 */
export type FakeAmqpConnection = true | ((published: AmqpPublished) => void);

/** Background work the service started (`invokeAsync(service, input)`); it does not run in the test. */
export interface QueuedCall {
  service: string;
  input: Record<string, unknown>;
  /** The CID `invokeAsync` resolved with. */
  cid: string;
}

/** A call of another service the service made (`invoke(service, input, options)`), as its fake received it. */
export interface InvokedCall {
  service: string;
  /** What the service passed, before any input model (the other service does not run in the test). */
  input: Record<string, unknown>;
  /** Upper case; POST unless the call asked for another. */
  method: string;
  /** The call's `timeoutMs`, when it gave one. */
  timeoutMs?: number;
}

/**
 * A fake of another service for `invoke`: `{ returns: value }` (a JSON value, or bytes), `{ throws:
 * new NotFound('…') }` (any SDK error, which the service receives as that class), or a function of
 * the call that returns the value (or a promise of it) or throws an SDK error.
 */
export type FakeService = { returns: unknown } | { throws: ServiceError } | ((call: InvokedCall) => unknown);

export interface Fakes {
  /** By connection name, as the service names it in `outgoing(name)`. */
  outgoing?: Record<string, FakeConnection>;
  /** Other services by name, as the service names them in `invoke(name, …)` and `invokeAll`. A service with no fake fails the test. */
  invoke?: Record<string, FakeService>;
  /** Named secrets' values (`secret(name)`): signatures are computed with them as on the host. */
  secrets?: Record<string, string>;
  /** Called for each publication before it is recorded; throw an SDK error (`new Forbidden()`) to make `publish` fail. */
  publish?: (publication: Publication) => void;
  /**
   * Named caches' entries at the start, by cache and key: `{ lookups: { 'customer:1': { name: 'Ann' } } }`.
   * Every cache name works in a test, in memory, the service's alone; `reset()` starts them over.
   */
  caches?: Record<string, Record<string, unknown>>;
  /** AMQP connections by name, as the service names them in `amqp(name)`; a publish on one with no fake fails the test. */
  amqp?: Record<string, FakeAmqpConnection>;
  /** SQL connections by name, as the service names them in `sql(name)`. */
  sql?: Record<string, FakeSqlConnection>;
  /** MQTT connections by name, as the service names them in `mqtt(name)`: publishes are recorded in `mqttPublished`. */
  mqtt?: Record<string, FakeMqttConnection>;
  /** SFTP connections by name, as the service names them in `sftp(name)`: an in-memory folder each; `sftpFiles(name)` shows it. */
  sftp?: Record<string, FakeSftpConnection>;
  /** SMTP connections by name, as the service names them in `mail(name)`: mails are checked as svc checks them and recorded in `mailSent`. */
  mail?: Record<string, FakeMailConnection>;
}

/** A fake SFTP connection: an in-memory folder, preloaded with `files` (path → content, relative to the root). */
export interface FakeSftpConnection {
  files?: Record<string, string | Uint8Array>;
  /** As the connection's max_file_bytes (default 64 MiB): a larger put or get is PayloadTooLarge. */
  maxFileBytes?: number;
}

/** A mail a service sent through `mail(connection).send`, as the fake received it (bytes attachments as base64). */
export interface MailSentRecord {
  connection: string;
  message: {
    from?: string | undefined;
    to: string | string[];
    cc?: string | string[] | undefined;
    bcc?: string | string[] | undefined;
    replyTo?: string | undefined;
    subject: string;
    text?: string | undefined;
    html?: string | undefined;
    headers?: Record<string, string> | undefined;
    attachments?: Array<{ filename: string; content: string; encoding: 'base64' | 'utf8'; contentType?: string | undefined }> | undefined;
  };
  /** Sent with `{ queue: true }`: the fake answers `{ queued: true, cid }`. */
  queued: boolean;
}

/**
 * A fake SMTP connection: `true` accepts every mail (all recipients accepted), a function sees
 * each one first and may throw an SDK error (`new ServiceUnavailable()`, `new BadRequest()`) to
 * make `send` fail.
 */
export type FakeMailConnection = true | ((mail: MailSentRecord) => void);

/** A fake MQTT connection: `{}` records; `publish` sees each message first and may throw an SDK error (`new ServiceUnavailable()`) to make it fail. */
export interface FakeMqttConnection {
  publish?: (message: MqttPublication) => void;
}

/** A message a service published through `mqtt(connection).publish`, as the fake received it. */
export interface MqttPublication {
  connection: string;
  topic: string;
  /** As the service gave it: a string, or the value sent as JSON. */
  message: unknown;
  qos: 0 | 1 | 2;
  retain: boolean;
  properties?: { contentType?: string | undefined; correlationData?: string | undefined; responseTopic?: string | undefined; userProperties?: Record<string, string> | undefined; messageExpiryInterval?: number | undefined };
}

/** One call of the service: what a channel would hand it. */
export interface CallRequest {
  /** Default GET. Picks the verb handler (`POST(ctx)`), or `handle`. */
  method?: string;
  /** `ctx.input`, checked against the service's input model (defaults filled) as a channel does; default `{}`. */
  input?: Record<string, unknown>;
  /** `ctx.payload`; default: the input. */
  payload?: unknown;
  /** Request headers (names lower-cased for the service, as svc does). */
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
  pathParams?: Record<string, string>;
  path?: string;
  /** `ctx.rawBody`: default the payload as JSON, or as it is when it is a string. */
  rawBody?: string;
  /** `ctx.user`: the authenticated caller. */
  user?: User;
  channel?: string;
  /** `ctx.delivery`: run the call as a delivery from the Use queue. */
  delivery?: Delivery;
  /** `ctx.cid`; default a fresh one per call. */
  cid?: string;
}

/** How one call ended. A service's error is a result (`error`), not a rejection. */
export interface CallResult<T = any> {
  status: number;
  /** No error. */
  ok: boolean;
  /** What the handler returned (bytes as a Uint8Array). */
  body: T;
  headers: Record<string, string>;
  contentType: string | undefined;
  /**
   * What the service raised, as the SDK class it raised (`NotFound`, `Conflict`...: test it with
   * `toBeInstanceOf`), or for anything else (an exception, a time limit) a `ServiceError` of kind
   * `Error`, `SERVICE_TIMEOUT`... An exception's `stack` holds the service's own frames.
   */
  error: ServiceError | undefined;
  /** What the service wrote with `ctx.log`. */
  logs: Array<{ level: 'debug' | 'info' | 'warn' | 'error'; message: string }>;
  cid: string;
}

/** A service running in the sandbox with fakes; deployed at its first call. */
export interface ServiceUnderTest {
  readonly name: string;
  call<T = any>(request?: CallRequest): Promise<CallResult<T>>;
  get<T = any>(input?: Record<string, unknown>, request?: CallRequest): Promise<CallResult<T>>;
  post<T = any>(input?: Record<string, unknown>, request?: CallRequest): Promise<CallResult<T>>;
  put<T = any>(input?: Record<string, unknown>, request?: CallRequest): Promise<CallResult<T>>;
  patch<T = any>(input?: Record<string, unknown>, request?: CallRequest): Promise<CallResult<T>>;
  delete<T = any>(input?: Record<string, unknown>, request?: CallRequest): Promise<CallResult<T>>;
  /** Outgoing requests made so far, in order. */
  readonly requests: readonly OutgoingRequest[];
  readonly published: readonly Publication[];
  /** AMQP publishes so far, in order (the confirmed ones: a fake that threw records nothing). */
  readonly amqpPublished: readonly AmqpPublished[];
  readonly queued: readonly QueuedCall[];
  /** `invoke` calls made so far (each of an `invokeAll` too), in order. */
  readonly invoked: readonly InvokedCall[];
  /** SQL statements run so far (each of a transaction too), in order. */
  readonly queries: readonly SqlQuery[];
  /** `mqtt(name).publish` calls made so far, in order. */
  readonly mqttPublished: readonly MqttPublication[];
  /** The files of a faked SFTP connection now, path → bytes (what the service put, renamed, left). */
  sftpFiles(connection: string): Record<string, Uint8Array>;
  /** `mail(name).send` calls so far, in order (a fake that threw records nothing). */
  readonly mailSent: readonly MailSentRecord[];
  /** Forgets what was recorded and deploys the service again: module-level state starts over. */
  reset(): Promise<void>;
}

/** Implemented by `svc test` (cli/testing/), which installs it before loading test files. */
export interface TestingEngine {
  testService(service: string, fakes: Fakes): ServiceUnderTest;
}

export interface TestCase {
  name: string;
  fn: () => unknown;
}

/** Where `svc test` installs its engine and collects the tests a file declares (on `globalThis[Symbol.for('svc.testing')]`). */
export interface TestRegistry {
  engine?: TestingEngine;
  tests: TestCase[];
  prefix: string[];
}

// On the global object, not in this module: the runner and the test files meet here even if
// they were handed two copies of this file.
const KEY = Symbol.for('svc.testing');
function registry(): TestRegistry {
  const g = globalThis as unknown as Record<symbol, TestRegistry | undefined>;
  return (g[KEY] ??= { tests: [], prefix: [] });
}

/**
 * The service `name` of the test file's directory (`orders` is `./orders.ts` beside the test),
 * or a file relative to it (`'./legacy/orders.js'`), run in the sandbox with these fakes.
 */
export function testService(name: string, fakes: Fakes = {}): ServiceUnderTest {
  const engine = registry().engine;
  if (!engine) throw new Error("svc/sdk/testing runs under `svc test` (it runs services in svc's sandbox)");
  return engine.testService(name, fakes);
}

/** A test: passes unless `fn` throws or rejects. Tests run one at a time, in file order. */
export function test(name: string, fn: () => unknown): void {
  const r = registry();
  r.tests.push({ name: [...r.prefix, name].join(' › '), fn });
}

export const it = test;

/** Groups tests under a name; `fn` runs at once and declares them. */
export function describe(name: string, fn: () => void): void {
  const r = registry();
  r.prefix.push(name);
  try {
    fn();
  } finally {
    r.prefix.pop();
  }
}

/** The SDK error a service's error arrived as: its own class when it raised one. */
export const serviceErrorOf = errorOfKind;
