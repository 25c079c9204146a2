import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import pino from 'pino';
import { compileModel, type InputChecker } from '../../kernel/services/model.ts';
import { sandboxSchema } from '../../kernel/config/schema.ts';
import { SvcError } from '../../kernel/errors.ts';
import type { ServiceRunner } from '../../kernel/sandbox/runner.ts';
import { startServiceRunner } from '../../kernel/sandbox/groups.ts';
import type { InvokeRequest, InvokeResult } from '../../kernel/sandbox/protocol.ts';
import { buildSdkBundle, transpile } from '../../kernel/services/registry.ts';
import type { Params } from '../../plugins/outgoing/rest/url.ts';
import type { ServiceError } from '../../sdk/errors.ts';
import { fromBase64 } from '../../sdk/internal/bytes.ts';
import { serviceErrorOf, type CallRequest, type CallResult, type Fakes, type ServiceUnderTest, type TestingEngine } from '../../sdk/testing/index.ts';
import { FakeHost } from './fakes.ts';

/** A path as the developer reads it: from the directory `svc test` runs in. */
export function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') ? path : rel;
}

/** The service file a test names: `orders` beside the test file, or a relative file name. */
function serviceFile(name: string, testDir: string): string {
  if (extname(name) || name.includes('/')) return resolve(testDir, name);
  for (const ext of ['.ts', '.js', '.mjs']) if (existsSync(join(testDir, name + ext))) return join(testDir, name + ext);
  throw new Error(`testService('${name}'): no ${name}.ts, .js or .mjs in ${shown(testDir)}`);
}

/**
 * The engine behind `svc/sdk/testing` (sdk/testing/index.ts): each `testService` deploys the
 * service's file into the sandbox runner `svc start` uses (the same SDK bundle, isolates and
 * limits), under a name of its own, and its host calls reach that service's fakes.
 */
export class TestEngine implements TestingEngine {
  private readonly byName = new Map<string, Harness>();
  private seq = 0;
  /** The test file being loaded or run: service names are found beside it. */
  testFile = '';
  /** Service exceptions seen since the current test began (shown with its failure). */
  exceptions: ServiceError[] = [];

  constructor(
    private readonly runner: () => ServiceRunner,
    readonly pathOf: (connection: string) => (params: Params | undefined) => string,
  ) {}

  testService(service: string, fakes: Fakes): ServiceUnderTest {
    const harness = new Harness(this, `${service}#${++this.seq}`, serviceFile(service, dirname(this.testFile)), fakes);
    this.byName.set(harness.deployName, harness);
    return harness;
  }

  /** The runner's host call handler. */
  hostCall = (op: string, argsJson: string, invocation: InvokeRequest): Promise<string> => {
    const harness = this.byName.get(invocation.service);
    return harness ? harness.host.answer(op, argsJson) : Promise.resolve('{"ok":false,"error":{"kind":"Error","status":500,"message":"no such service under test"}}');
  };

  get pool(): ServiceRunner {
    return this.runner();
  }
}

/**
 * An engine over a sandbox runner of its own: one sandbox process with the default limits of
 * `server.sandbox` (a service's own `limits` apply as in production), isolates kept while in use.
 */
export async function startTestEngine(pathOf: TestEngine['pathOf']): Promise<{ engine: TestEngine; close: () => Promise<void> }> {
  const sandbox = sandboxSchema.parse(undefined);
  let runner: ServiceRunner | undefined;
  const engine = new TestEngine(() => runner!, pathOf);
  runner = await startServiceRunner(
    {
      processes: 1,
      caps: { spillAt: sandbox.spill_at, defaultMemoryMb: sandbox.memory_mb, maxMemoryMb: sandbox.max_memory_mb, defaultTimeoutMs: sandbox.timeout_ms, maxTimeoutMs: sandbox.max_timeout_ms, maxOutputBytes: sandbox.max_output_bytes, idleMs: 0 },
      log: pino({ level: 'silent' }),
      hostCall: engine.hostCall,
    },
    buildSdkBundle(),
  );
  return { engine, close: () => runner.close() };
}

interface Deployed {
  checkInput: InputChecker | undefined;
}

class Harness implements ServiceUnderTest {
  readonly name: string;
  readonly host: FakeHost;
  private deployed: Promise<Deployed> | undefined;
  private calls = 0;

  constructor(
    private readonly engine: TestEngine,
    readonly deployName: string,
    private readonly file: string,
    fakes: Fakes,
  ) {
    this.name = basename(file, extname(file));
    this.host = new FakeHost(this.name, fakes, engine.pathOf);
  }

  get requests() {
    return this.host.requests;
  }
  get published() {
    return this.host.published;
  }
  get amqpPublished() {
    return this.host.amqpPublished;
  }

  get mqttPublished() {
    return this.host.mqttPublished;
  }

  get mailSent() {
    return this.host.mailSent;
  }

  get queued() {
    return this.host.queued;
  }
  get invoked() {
    return this.host.invoked;
  }

  get queries() {
    return this.host.queries;
  }

  sftpFiles(connection: string): Record<string, Uint8Array> {
    return Object.fromEntries(this.host.sftpFolder(connection).files);
  }

  async reset(): Promise<void> {
    this.host.forget();
    this.deployed = undefined;
    await this.deploy();
  }

  private deploy(): Promise<Deployed> {
    return (this.deployed ??= (async () => {
      const fileName = basename(this.file);
      if (!existsSync(this.file)) throw new Error(`no service file ${shown(this.file)}`);
      const compiled = transpile(fileName, readFileSync(this.file, 'utf8'));
      const outcome = 'error' in compiled ? { ok: false as const, error: compiled.error } : await this.engine.pool.deploy(this.deployName, fileName, compiled.code, compiled.map);
      if (!outcome.ok) throw new Error(`${this.name} does not deploy:\n${outcome.error.replace(/^(?=[\w.-]+:\d+:\d+)/gm, `${shown(dirname(this.file))}/`)}`);
      return { checkInput: compileModel(outcome.meta.input) };
    })());
  }

  async call<T>(request: CallRequest = {}): Promise<CallResult<T>> {
    const { checkInput } = await this.deploy();
    const cid = request.cid ?? `test-${this.name}-${++this.calls}`;
    const input = { ...(request.input ?? {}) };
    const problem = checkInput?.(input, new Set());
    if (problem) return outcome<T>(cid, this.file, { status: 400, headers: {}, error: { kind: 'BadRequest', message: `Invalid input: ${problem}` } });
    const payload = request.payload === undefined ? input : request.payload;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(request.headers ?? {})) headers[k.toLowerCase()] = v;
    const invoke: InvokeRequest = {
      service: this.deployName,
      cid,
      channel: request.channel,
      method: (request.method ?? 'GET').toUpperCase(),
      path: request.path,
      input,
      payload,
      headers,
      query: request.query ?? {},
      pathParams: request.pathParams ?? {},
      rawBody: { text: request.rawBody ?? (typeof payload === 'string' ? payload : JSON.stringify(payload) ?? '') },
      auth: request.user,
      delivery: request.delivery,
    };
    this.host.problems = [];
    let result: InvokeResult;
    try {
      result = await this.engine.pool.invoke(invoke);
    } catch (err) {
      if (!(err instanceof SvcError)) throw err;
      result = { status: err.status, headers: {}, error: { kind: err.code as 'Error', message: err.details } };
    }
    if (this.host.problems.length) throw new Error(this.host.problems.join('\n'));
    const out = outcome<T>(cid, this.file, result);
    if (out.error && result.error?.stack) this.engine.exceptions.push(out.error);
    return out;
  }

  get<T>(input?: Record<string, unknown>, request?: CallRequest) {
    return this.call<T>({ ...request, method: 'GET', input });
  }
  post<T>(input?: Record<string, unknown>, request?: CallRequest) {
    return this.call<T>({ ...request, method: 'POST', input });
  }
  put<T>(input?: Record<string, unknown>, request?: CallRequest) {
    return this.call<T>({ ...request, method: 'PUT', input });
  }
  patch<T>(input?: Record<string, unknown>, request?: CallRequest) {
    return this.call<T>({ ...request, method: 'PATCH', input });
  }
  delete<T>(input?: Record<string, unknown>, request?: CallRequest) {
    return this.call<T>({ ...request, method: 'DELETE', input });
  }
}

function outcome<T>(cid: string, file: string, result: InvokeResult): CallResult<T> {
  let error: ServiceError | undefined;
  if (result.error) {
    error = serviceErrorOf(result.error.kind, result.status, result.error.message);
    // The service's own frames (the isolate names its files file:///services/…), not this harness's.
    const frames = result.error.stack?.replaceAll('file:///services/', `${shown(dirname(file))}/`);
    error.stack = `${result.error.message}${frames ? `\n${frames}` : ''}`;
  }
  const body = result.bodyEncoding === 'base64' ? fromBase64(result.body as string) : result.body;
  return {
    status: result.status,
    ok: !result.error,
    body: body as T,
    headers: { ...result.headers },
    contentType: result.contentType,
    error,
    logs: (result.logs ?? []).map(([level, message]) => ({ level, message })),
    cid,
  };
}
