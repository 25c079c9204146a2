/**
 * A sandbox process: runs service isolates for the kernel. Started by pool.ts with
 * --no-node-snapshot; talks over fd 3. A V8 fatal error here (isolated-vm 5.0.4 can be
 * crashed by some inputs) kills only this process; the kernel restarts it.
 *
 * Service code never runs on this process's main thread: isolates are built, evaluated and
 * called with isolated-vm's asynchronous calls, so one service's slow top-level code or loop
 * does not stall the calls of its neighbours here.
 */
import ivm from 'isolated-vm';
import { Socket } from 'node:net';
import { hostCallArgsLimit, Wire } from './wire.ts';
import { monotonicNow } from '../platform/clock.ts';
import { IdTable } from './id-table.ts';
import { Ticker } from '../platform/ticker.ts';
import { runLocalHostCall, isLocalHostCall } from './local-calls.ts';
import type { KernelMessage, SandboxCaps, SandboxFailure } from './protocol.ts';
import { lowerPriority } from './priority.ts';
import { gateKeyOf, RebuildGate } from './rebuild-gate.ts';

interface Instance {
  /** The service it runs (CPU reports name it). */
  service: string;
  isolate: ivm.Isolate;
  dispatchMany: ivm.Reference<(json: string, raws: string) => void>;
  resolveHostCall: ivm.Reference<(seq: number, json: string) => void>;
  /** Calls handed to the isolate and not finished. */
  running: IdTable<Call>;
  /** Calls waiting for a slot: each call holds heap in the isolate, so few run at once. */
  waiting: Queued[];
  /** Calls another service made with invoke() waiting for a slot: they start before `waiting`. */
  nested: Queued[];
  /** Calls it holds (running or parked), by invoke depth: each depth has a share of its own (`maxHeld`). */
  held: number[];
  /** Running calls that wait on the kernel (an outgoing call, a publish): they use no CPU, so they leave their slot. */
  parked: number;
  flushQueued: boolean;
  disposed: boolean;
  /** Why the kernel disposed it, so the calls it cut short get the right error. */
  disposedFor?: 'timeout';
  /** Its memory limit disposed it under a call: its service's next build waits its tenant's turn (rebuild-gate.ts). */
  memoryLimited?: boolean;
  /** The latest deadline of any call it ran: code it started may run until then, not after. */
  busyUntil: number;
  /** CPU time when last sampled while it had no call running (work after the response). */
  idleCpu: bigint | undefined;
  /** When it was built or last handed a batch of calls: one idle for `caps.idleMs` is dropped. */
  lastUsed: number;
  /** Its running-time clock (isolate.wallTime, ns) when last sampled for the kernel's CPU reports. */
  cpuSeen: bigint;
}

interface Deployed {
  name: string;
  file: string;
  code: string;
  memoryMb: number;
  timeoutMs: number;
  instance: Instance | undefined;
  /** An isolate being built (first call after a disposal); calls wait in `queued`. */
  building: boolean;
  queued: Queued[];
}

/** A call not yet handed to an isolate: its request's JSON, and its body's text when that crossed apart. */
interface Queued {
  id: number;
  json: string;
  raw: string | undefined;
}

/**
 * How deep in an invoke chain a call is (0: from a channel or the queue), and its own time limit
 * when below its service's: its caller's remaining time, which runs from when the call arrived
 * here, not from when its isolate (perhaps built first) takes it.
 */
interface Nesting {
  depth: number;
  limitMs: number | undefined;
  arrived: number;
}

interface Call extends Nesting {
  id: number;
  service: Deployed;
  instance: Instance | undefined;
  deadline: number;
  timedOut: boolean;
  /** Its host calls forwarded to the kernel and not answered yet. */
  awaitingHost: number;
}

// Removed so that service code cannot block its thread on shared memory or compile native-speed code outside the heap limit.
const PRELUDE = `
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  delete globalThis.WebAssembly;
`;

/**
 * Calls one isolate runs at once, not counting those parked on the kernel (outgoing calls, a
 * service they invoked): more wait here, outside its heap. Parked ones count only against the
 * second, larger cap (`caps.maxCallsPerIsolate`), so an integration service can have many calls
 * out to slow systems at once. That cap applies per invoke depth: a caller parked on a callee can
 * never take the room its callee needs (see startWaiting).
 */
const MAX_CONCURRENT_CALLS = 128;
const MAX_CALLS_IN_ISOLATE = 2048;
/** Top-level code of a service file, and its `service({...})` description, get this long. */
const EVALUATE_MS = 2000;
/** Building an isolate as a whole: the SDK, the service's top-level code and its description. */
export const BUILD_MS = 2 * EVALUATE_MS + 1000;
const WATCHDOG_MS = 20;
/** Rebuilds after memory limits, spaced per tenant. */
const rebuildGate = new RebuildGate(monotonicNow);
/** How often the CPU services used is reported while any of their isolates has work (`caps.reportCpu`). */
const CPU_REPORT_MS = 100;
const IDLE_SWEEP_MS = 250;
/** CPU an isolate with no call may use in one watchdog period past its deadline (GC and the like) before it counts as still running code. */
const BUSY_CPU_NS = 2_000_000n;

let sdkCode = '';
let caps: SandboxCaps = { defaultMemoryMb: 64, maxMemoryMb: 512, defaultTimeoutMs: 5000, maxTimeoutMs: 60000, maxOutputBytes: 16 << 20, idleMs: 0 };
const services = new Map<string, Deployed>();
/** Calls by the kernel's id; an IdTable, not a Map, for the reason id-table.ts gives. */
const calls = new IdTable<Call>();
/** Instances with no call running whose last deadline has not passed, or that still use CPU. */
const cooling = new Set<Instance>();
/** The watchdog (watchCalls) runs while a call or a cooling instance is here, and never while the process is idle. */
const watchdog = new Ticker(watchCalls);
/** The idle sweep (dropIdle) runs while an instance could still be dropped or the rebuild gate remembers a limit. */
const idleSweep = new Ticker(dropIdle);

/**
 * Leaves at once. process.exit() waits for isolate threads, and one still running service code
 * (a loop in Error.prepareStackTrace, say) would keep an orphan burning a core after its kernel
 * is gone; nothing here needs flushing.
 */
function leave(): never {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
}

const channel = new Socket({ fd: 3, readable: true, writable: true });
// The kernel is gone (or closed the pipe): so is the reason to live.
channel.on('close', leave);
channel.on('error', leave);
// The kernel is the only writer here; a line it did not frame means the pipe is not the kernel's.
const wire = new Wire(channel, { onMessage: (h, b, raw) => onMessage(h as KernelMessage, b, raw), onViolation: leave, maxLine: 1 << 30 });

function fail(id: number, code: SandboxFailure, message?: string): void {
  wire.send(message === undefined ? { t: 'result', id, fail: code } : { t: 'result', id, fail: code, message: message.slice(0, 4000) });
}

async function createInstance(svc: Deployed): Promise<{ instance: Instance; meta: Record<string, unknown> }> {
  const isolate = new ivm.Isolate({
    memoryLimit: svc.memoryMb,
    onCatastrophicError: (message) => {
      process.stderr.write(`sandbox: catastrophic isolate error in ${svc.name}: ${message}\n`);
      process.abort();
    },
  });
  // isolated-vm's own timeouts do not cover everything service code can run while an isolate is
  // built (an Error.prepareStackTrace that loops while a top-level error is copied out, for one):
  // past the whole budget the isolate is disposed, which fails whatever is still pending.
  let overran = false;
  const guard = setTimeout(() => {
    overran = true;
    if (!isolate.isDisposed) isolate.dispose();
  }, BUILD_MS);
  try {
    const context = await isolate.createContext();
    const global = context.global;
    await context.eval(PRELUDE);
    const holder: { instance?: Instance } = {};
    global.setSync(
      '__svc_send',
      new ivm.Callback((callId: unknown, seq: unknown, op: unknown, argsJson: unknown) => onHostCall(holder.instance, callId, seq, op, argsJson), {
        ignored: true,
      }),
    );
    global.setSync('__svc_done', new ivm.Callback((lines: unknown) => onResults(holder.instance, lines), { ignored: true }));
    const sdk = await isolate.compileModule(sdkCode, { filename: 'svc:sdk' });
    sdk.instantiateSync(context, () => {
      throw new Error('the SDK imports nothing');
    });
    await sdk.evaluate({ timeout: EVALUATE_MS });
    const runtime = global.getSync('__svc_runtime', { reference: true }) as ivm.Reference<Record<string, unknown>>;
    const dispatchMany = runtime.getSync('dispatchMany', { reference: true }) as Instance['dispatchMany'];
    const register = runtime.getSync('register', { reference: true }) as ivm.Reference<(def: unknown, max: number) => string>;
    const resolveHostCall = runtime.getSync('resolveHostCall', { reference: true }) as Instance['resolveHostCall'];
    await context.eval('delete globalThis.__svc_runtime; delete globalThis.__svc_send; delete globalThis.__svc_done;');

    const mod = await isolate.compileModule(svc.code, { filename: `file:///services/${svc.file}` });
    const foreign = mod.dependencySpecifiers.filter((s) => s !== 'svc/sdk');
    if (foreign.length) throw new Error(`services may import only from 'svc/sdk' (found '${foreign.join("', '").slice(0, 200)}')`);
    // Linking runs no service code, so the synchronous form is safe (the asynchronous one can crash, see the notes on 5.0.4).
    mod.instantiateSync(context, () => sdk);
    await mod.evaluate({ timeout: EVALUATE_MS });
    const definition = mod.namespace.getSync('default', { reference: true }) as ivm.Reference<unknown>;
    if (definition.typeof === 'undefined') throw new Error('the service file must `export default service({...})`');
    const metaJson = await register.apply(undefined, [definition.derefInto(), caps.maxOutputBytes], { timeout: EVALUATE_MS });
    const instance: Instance = { service: svc.name, isolate, dispatchMany, resolveHostCall, running: new IdTable<Call>(8), waiting: [], nested: [], held: [], parked: 0, flushQueued: false, disposed: false, busyUntil: 0, idleCpu: undefined, lastUsed: monotonicNow(), cpuSeen: 0n };
    holder.instance = instance;
    // The build ran the service's top-level code: its CPU counts as the service's.
    watchCpu(instance);
    return { instance, meta: JSON.parse(metaJson) as Record<string, unknown> };
  } catch (err) {
    if (!isolate.isDisposed) {
      if (caps.reportCpu) oweCpu(svc.name, isolate, 0n);
      isolate.dispose();
    }
    if (overran) throw new Error(`the service's top-level code and description did not finish within ${BUILD_MS} ms`);
    throw err;
  } finally {
    clearTimeout(guard);
  }
}

function clamp(value: unknown, fallback: number, max: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), max) : fallback;
}

/** Deploys and undeploys run one at a time, in the order the kernel sent them. */
let deployQueue: Promise<void> = Promise.resolve();

async function deploy(did: number, name: string, file: string, code: string, declaredMemoryMb: number | undefined, capMb: number | undefined): Promise<void> {
  // A tenant's memory quota lowers the ceiling, and the default with it.
  const maxMb = capMb === undefined ? caps.maxMemoryMb : Math.min(caps.maxMemoryMb, capMb);
  const defaultMb = Math.min(caps.defaultMemoryMb, maxMb);
  // The kernel passes the memory limit a version declared when another process built it already.
  const startMb = Math.max(8, clamp(declaredMemoryMb, defaultMb, maxMb));
  const svc: Deployed = { name, file, code, memoryMb: startMb, timeoutMs: caps.defaultTimeoutMs, instance: undefined, building: true, queued: [] };
  try {
    let { instance, meta } = await createInstance(svc);
    const limits = (meta.limits ?? {}) as { timeoutMs?: number; memoryMb?: number };
    svc.timeoutMs = clamp(limits.timeoutMs, caps.defaultTimeoutMs, caps.maxTimeoutMs);
    const memoryMb = Math.max(8, clamp(limits.memoryMb, defaultMb, maxMb));
    if (memoryMb !== svc.memoryMb) {
      // The memory limit is fixed when an isolate is made, and the service declares it inside: make it again.
      dispose(instance);
      svc.memoryMb = memoryMb;
      ({ instance, meta } = await createInstance(svc));
    }
    svc.instance = instance;
    svc.building = false;
    const previous = services.get(name);
    const inUse = !!previous && (usable(previous.instance) || previous.queued.length > 0);
    services.set(name, svc);
    if (previous) {
      if (previous.instance) retire(previous.instance);
      // Calls that waited for the old version's rebuild run on the new version.
      for (const q of previous.queued) startOn(svc, instance, q);
    }
    // The build checked the code, gave its description, and pinned a crash on it if there was one.
    // A service not in use here (a first deploy, a restarted process, a process that is not its
    // home) gives its memory back now; its first call builds it again.
    if (!inUse && caps.idleMs > 0) {
      svc.instance = undefined;
      dispose(instance);
    } else idleSweep.atMost(IDLE_SWEEP_MS);
    wire.send({ t: 'deployed', did, name, ok: true, meta: { ...meta, limits: { timeoutMs: svc.timeoutMs, memoryMb: svc.memoryMb } } });
  } catch (err) {
    wire.send({ t: 'deployed', did, name, ok: false, error: describeCompileError(err, file) });
  }
}

/** `file:line:col: message`, with the position V8 gives (compile errors and top-level throws alike). */
function describeCompileError(err: unknown, file: string): string {
  const message = (err instanceof Error ? err.message : String(err)).slice(0, 2000);
  const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const at = new RegExp(`services/${escaped}:(\\d+):(\\d+)`).exec(`${message}\n${((err as Error)?.stack ?? '').slice(0, 4000)}`);
  const text = message.replace(/\s*\[file:\/\/\/services\/[^\]]*\]\s*$/, '');
  return at ? `${file}:${at[1]}:${at[2]}: ${text}` : `${file}: ${text}`;
}

/** Disposes an instance once the calls it is running have finished. */
function retire(instance: Instance): void {
  if (instance.running.size === 0 && !hasQueued(instance)) dispose(instance);
  else instance.disposed = true;
}

function hasQueued(instance: Instance): boolean {
  return instance.waiting.length > 0 || instance.nested.length > 0;
}

function dispose(instance: Instance, reason?: 'timeout'): void {
  instance.disposed = true;
  cooling.delete(instance);
  if (reason) instance.disposedFor = reason;
  if (!instance.isolate.isDisposed) {
    // Read while it can be: a disposed isolate has no CPU time to read.
    if (cpuWatched.delete(instance)) oweCpu(instance.service, instance.isolate, instance.cpuSeen);
    instance.isolate.dispose();
  }
}

function usable(instance: Instance | undefined): instance is Instance {
  return !!instance && !instance.disposed && !instance.isolate.isDisposed;
}

function call(id: number, name: string, requestJson: string, raw: string | undefined, nesting: Nesting): void {
  const svc = services.get(name);
  if (!svc) return fail(id, 'SERVICE_NOT_DEPLOYED');
  // The call's entry first: startOn and rebuild find its depth and limit there.
  calls.set(id, { id, service: svc, instance: undefined, deadline: Infinity, timedOut: false, awaitingHost: 0, ...nesting });
  watchdog.atMost(WATCHDOG_MS);
  if (usable(svc.instance)) return startOn(svc, svc.instance, { id, json: requestJson, raw });
  // The isolate was disposed (time or memory limit): rebuild it off this thread; calls wait.
  svc.queued.push({ id, json: requestJson, raw });
  if (!svc.building) void rebuild(svc);
}

async function rebuild(svc: Deployed): Promise<void> {
  // A disposed instance still in place was cut by a time or memory limit: that is what the
  // kernel counts as a rebuild. One dropped while idle (or never built here) left no instance.
  const afterLimit = svc.instance !== undefined;
  svc.building = true;
  let instance: Instance | undefined;
  let problem = '';
  let waitedMs = 0;
  if (svc.instance?.memoryLimited) {
    const wait = rebuildGate.turn(gateKeyOf(svc.name));
    if (wait > 0) {
      const from = monotonicNow();
      await new Promise((resolve) => setTimeout(resolve, wait));
      waitedMs = monotonicNow() - from;
    }
  }
  try {
    instance = (await createInstance(svc)).instance;
  } catch (err) {
    problem = describeCompileError(err, svc.file);
  }
  svc.building = false;
  if (services.get(svc.name) !== svc) {
    // Redeployed or removed meanwhile: the new version took the queue (or nobody wants it).
    if (instance) dispose(instance);
    return;
  }
  svc.instance = instance;
  if (instance) idleSweep.atMost(IDLE_SWEEP_MS);
  if (instance && afterLimit) wire.send({ t: 'rebuilt', name: svc.name, waitedMs });
  const queued = svc.queued.splice(0);
  for (const q of queued) {
    if (!calls.has(q.id)) continue;
    if (instance) startOn(svc, instance, q);
    else {
      calls.delete(q.id);
      fail(q.id, 'SERVICE_NOT_DEPLOYED', problem);
    }
  }
}

function startOn(svc: Deployed, instance: Instance, queued: Queued): void {
  const id = queued.id;
  let entry = calls.get(id);
  if (entry) entry.instance = instance;
  else {
    calls.set(id, (entry = { id, service: svc, instance, deadline: Infinity, timedOut: false, awaitingHost: 0, depth: 0, limitMs: undefined, arrived: 0 }));
    watchdog.atMost(WATCHDOG_MS);
  }
  (entry.depth > 0 ? instance.nested : instance.waiting).push(queued);
  cooling.delete(instance);
  instance.idleCpu = undefined;
  if (!instance.flushQueued) {
    instance.flushQueued = true;
    process.nextTick(startWaiting, instance);
  }
}

/**
 * Hands waiting calls to the isolate in one batch, up to its concurrency cap (calls running and
 * not parked) and, per invoke depth, the cap on calls it holds. Calls made by invoke() go first:
 * each one frees a caller parked on it. A depth's calls count only against that depth's share, and
 * a call at depth d waits only on calls at depth d + 1, down to the deepest allowed, which invoke
 * nothing: so callers parked on callees can never hold the room those callees need, however
 * services invoke each other across requests (A → B in one, B → A in another).
 */
function startWaiting(instance: Instance): void {
  instance.flushQueued = false;
  let room = MAX_CONCURRENT_CALLS - (instance.running.size - instance.parked);
  if (room <= 0 || !hasQueued(instance) || instance.isolate.isDisposed) return;
  const maxHeld = caps.maxCallsPerIsolate ?? MAX_CALLS_IN_ISOLATE;
  const now = monotonicNow();
  let json = '[';
  // The bodies that crossed apart, in the batch's order: the runtime cuts them by their lengths.
  let raws = '';
  let first = true;
  /** Starts one call when there is room for it; true when it left the queue (started, or ended meanwhile). */
  const admit = (item: Queued): boolean => {
    const entry = calls.get(item.id);
    if (!entry) return true;
    const held = instance.held[entry.depth] ?? 0;
    if (room <= 0 || held >= maxHeld) return false;
    const limit = entry.service.timeoutMs;
    const inherited = entry.limitMs !== undefined && entry.limitMs < limit;
    if (inherited && entry.arrived + entry.limitMs! <= now) {
      // Its caller's time ran out while it waited: started now, it would only be cut, and its isolate with it.
      calls.delete(item.id);
      fail(item.id, 'SERVICE_TIMEOUT');
      return true;
    }
    room--;
    instance.held[entry.depth] = held + 1;
    entry.deadline = inherited ? entry.arrived + entry.limitMs! : now + limit;
    if (entry.deadline > instance.busyUntil) instance.busyUntil = entry.deadline;
    instance.running.set(item.id, entry);
    json += (first ? '' : ',') + item.json;
    if (item.raw !== undefined) raws += item.raw;
    first = false;
    return true;
  };
  if (instance.nested.length) instance.nested = instance.nested.filter((item) => !admit(item));
  let started = 0;
  while (started < instance.waiting.length && admit(instance.waiting[started]!)) started++;
  if (started) instance.waiting.splice(0, started);
  if (first) return;
  instance.lastUsed = now;
  watchCpu(instance);
  instance.dispatchMany.applyIgnored(undefined, [json + ']', raws]);
}

/** Result lines from the isolate's runtime: `<callId>\t<envelope JSON>\n` each. */
function onResults(instance: Instance | undefined, lines: unknown): void {
  if (!instance || typeof lines !== 'string') return;
  let start = 0;
  for (let nl = lines.indexOf('\n'); nl !== -1; start = nl + 1, nl = lines.indexOf('\n', start)) {
    const tab = lines.indexOf('\t', start);
    if (tab === -1 || tab > nl) continue;
    const id = Number(lines.slice(start, tab));
    // Only a call this isolate is running can be answered from it, and only once.
    const entry = instance.running.get(id);
    if (!entry || !instance.running.delete(id) || !calls.delete(id)) continue;
    instance.held[entry.depth]!--;
    if (entry.awaitingHost > 0) instance.parked--;
    const envelope = lines.slice(tab + 1, nl);
    if (envelope.length > caps.maxOutputBytes + 1024) fail(id, 'SERVICE_OUTPUT_TOO_LARGE');
    else wire.sendRaw('{"t":"result","id":' + id + '}\t' + envelope + '\n');
  }
  afterProgress(instance);
}

function afterProgress(instance: Instance): void {
  if (hasQueued(instance) && !instance.flushQueued && !instance.isolate.isDisposed) {
    instance.flushQueued = true;
    process.nextTick(startWaiting, instance);
  }
  if (instance.running.size === 0 && !hasQueued(instance)) {
    if (instance.disposed) dispose(instance);
    else {
      cooling.add(instance);
      watchdog.atMost(WATCHDOG_MS);
    }
  }
}

/** Fails every call of an isolate that died under them (time limit, memory limit). */
function failCallsOf(instance: Instance): void {
  const queued = [...instance.nested, ...instance.waiting].map((w) => calls.get(w.id)).filter((e): e is Call => !!e);
  for (const entry of [...instance.running.values(), ...queued]) {
    calls.delete(entry.id);
    if (entry.timedOut) fail(entry.id, 'SERVICE_TIMEOUT');
    else if (instance.disposedFor === 'timeout') fail(entry.id, 'SERVICE_UNAVAILABLE', 'service sandbox was reset after another call timed out');
    else {
      fail(entry.id, 'SERVICE_MEMORY_LIMIT');
      instance.memoryLimited = true;
    }
  }
  if (instance.memoryLimited) {
    rebuildGate.limitMet(gateKeyOf(instance.service));
    idleSweep.atMost(IDLE_SWEEP_MS);
  }
  instance.running.clear();
  instance.parked = 0;
  instance.held.length = 0;
  instance.waiting.length = 0;
  instance.nested.length = 0;
  instance.disposed = true;
  cooling.delete(instance);
}

const hostCalls = new Map<string, Instance>();

function onHostCall(instance: Instance | undefined, callId: unknown, seq: unknown, op: unknown, argsJson: unknown): void {
  if (!instance || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) return;
  if (typeof op !== 'string' || typeof argsJson !== 'string' || typeof callId !== 'number') {
    return answerHostCall(instance, seq, { ok: false, error: { kind: 'Error', status: 500, message: 'malformed host call' } });
  }
  // Pure operations need no request: answered here whatever call they are attributed to.
  if (isLocalHostCall(op)) return answerHostCall(instance, seq, runLocalHostCall(op, argsJson));
  // Sent on, a line this long would break the wire protocol and cost every call in this process.
  if (argsJson.length > hostCallArgsLimit(caps)) {
    return answerHostCall(instance, seq, { ok: false, error: { kind: 'PayloadTooLarge', status: 413, message: `the arguments of ${op.slice(0, 100)} (${argsJson.length} characters as JSON) exceed the sandbox's limit of ${hostCallArgsLimit(caps)}` } });
  }
  const entry = calls.get(callId);
  if (!entry || entry.instance !== instance) {
    return answerHostCall(instance, seq, { ok: false, error: { kind: 'Error', status: 500, message: 'host call outside a running request' } });
  }
  hostCalls.set(seq + ':' + callId, instance);
  if (entry.awaitingHost++ === 0 && instance.running.has(callId)) {
    instance.parked++;
    afterProgress(instance);
  }
  wire.send({ t: 'hostcall', id: callId, seq, op: op.slice(0, 200) }, argsJson);
}

function answerHostCall(instance: Instance | undefined, seq: number, reply: unknown): void {
  answerHostCallJson(instance, seq, JSON.stringify(reply));
}

function answerHostCallJson(instance: Instance | undefined, seq: number, replyJson: string): void {
  if (!instance || instance.isolate.isDisposed) return;
  // The reply resumes the call's code.
  watchCpu(instance);
  instance.resolveHostCall.applyIgnored(undefined, [seq, replyJson]);
}

function undeploy(name: string): void {
  const svc = services.get(name);
  services.delete(name);
  if (svc?.instance) retire(svc.instance);
  for (const q of svc?.queued ?? []) if (calls.delete(q.id)) fail(q.id, 'SERVICE_NOT_DEPLOYED');
}

function onMessage(message: KernelMessage, body: string, raw: string | undefined): void {
  switch (message.t) {
    case 'call':
      call(message.id, message.svc, body, raw, { depth: message.d ?? 0, limitMs: message.ms, arrived: monotonicNow() });
      break;
    case 'hostreply': {
      const key = `${message.seq}:${message.id}`;
      const instance = hostCalls.get(key);
      hostCalls.delete(key);
      const entry = calls.get(message.id);
      if (entry && entry.awaitingHost > 0 && --entry.awaitingHost === 0 && entry.instance?.running.has(entry.id)) entry.instance.parked--;
      answerHostCallJson(instance, message.seq, body);
      break;
    }
    case 'cancel': {
      // Only a call still queued is dropped (its queue skips it); one running ends at its own deadline.
      const entry = calls.get(message.id);
      if (entry && !entry.instance?.running.has(entry.id)) calls.delete(entry.id);
      break;
    }
    case 'deploy': {
      const code = JSON.parse(body) as string;
      deployQueue = deployQueue.then(() => deploy(message.did, message.name, message.file, code, message.memoryMb, message.capMb));
      break;
    }
    case 'undeploy':
      deployQueue = deployQueue.then(() => undeploy(message.name));
      break;
    case 'init':
      caps = message.caps;
      if (caps.belowNormalPriority) lowerPriority();
      sdkCode = JSON.parse(body) as string;
      wire.send({ t: 'ready' });
      break;
  }
}

// Elapsed-time watchdog: one timer for all calls, so a call costs no timer of its own. Deadlines
// are read from the monotonic clock: a wall clock set forward must not time out every call.
// It also notices isolates that died under their calls (the memory limit disposes them), and
// isolates still using CPU after their last call's deadline (a microtask chain, or code resumed
// by host replies, that a handler left behind): nothing a service starts outlives its limit.
// It ticks only while there is a call or a cooling instance (Ticker): an idle process sleeps.
function watchCalls(): number {
  const now = monotonicNow();
  const dead = new Set<Instance>();
  for (const entry of calls.values()) {
    const instance = entry.instance;
    if (!instance) continue;
    if (instance.isolate.isDisposed) dead.add(instance);
    else if (!entry.timedOut && now > entry.deadline) {
      entry.timedOut = true;
      dispose(instance, 'timeout');
      dead.add(instance);
    }
  }
  for (const instance of dead) failCallsOf(instance);
  for (const instance of cooling) {
    if (instance.isolate.isDisposed) {
      cooling.delete(instance);
      continue;
    }
    if (now <= instance.busyUntil) continue;
    const cpu = instance.isolate.cpuTime;
    if (instance.idleCpu !== undefined && cpu - instance.idleCpu > BUSY_CPU_NS) {
      wire.send({ t: 'overrun', name: instance.service });
      dispose(instance);
    } else if (instance.idleCpu === undefined) instance.idleCpu = cpu;
    else {
      instance.idleCpu = undefined;
      cooling.delete(instance);
    }
  }
  return calls.size > 0 || cooling.size > 0 ? WATCHDOG_MS : 0;
}

/**
 * An idle isolate keeps its heaps' high-water mark (nothing collects garbage in an isolate that
 * runs no code): about 1.2 MB of RSS after a build, 2 to 3 MB after a load. One that had no call
 * for `caps.idleMs`, and whose last deadline has passed, is dropped; its next call builds it
 * again, as after a time limit. Between them, this and the drop at deploy leave a process only
 * the isolates of the services it serves (their home; another only while calls spill over).
 * Once nothing is left to drop (and the rebuild gate remembers no limit) it stops until an isolate is built.
 */
function dropIdle(): number {
  rebuildGate.sweep();
  let kept = 0;
  if (caps.idleMs > 0) {
    const now = monotonicNow();
    for (const svc of services.values()) {
      const instance = svc.instance;
      if (!usable(instance)) continue;
      if (instance.running.size || hasQueued(instance) || cooling.has(instance) || now <= instance.busyUntil || now - instance.lastUsed < caps.idleMs) {
        kept++;
        continue;
      }
      svc.instance = undefined;
      dispose(instance);
    }
  }
  return kept > 0 || rebuildGate.remembers ? IDLE_SWEEP_MS : 0;
}

// ---------------------------------------------------------------------------------------------
// CPU reports (caps.reportCpu): the CPU this process used while service isolates had work,
// divided among their services by how long each one's isolate ran their code. The process's own
// clock (process.cpuUsage: every thread, so what the main thread and V8's helper threads spend on
// a service's calls is that service's too) is exact: a tenant with processes of its own is
// charged what they used, as /proc counts it. The divider is the isolates' clock of running time
// (isolate.wallTime), not isolate.cpuTime: cpuTime counts the stretch of code an isolate is
// running in wall time, and falls back to its thread's CPU time when the stretch ends, so its
// readings jump back (under steady load a stretch lasts as long as the load; on a busy machine
// readings were twice the CPU), and the report in which one jumps back gives all of that
// report's CPU to the other services. Isolates running side by side get the cores in turn, so
// their running times divide the CPU as it was used. Batched: one message per CPU_REPORT_MS
// while any isolate has work, none while idle. An isolate disposed by the memory limit cannot be
// read: the process's CPU of that stretch goes to the services that could be.

/** Isolates that ran code since their last sample. */
const cpuWatched = new Set<Instance>();
/** How long each service's isolates ran code since the last report (ns): the shares of the process's CPU. */
const ranFor = new Map<string, bigint>();
let cpuTimer: NodeJS.Timeout | undefined;
/** The process's CPU clock when the last report was made (or the reports started). */
let cpuMark = process.cpuUsage();

function watchCpu(instance: Instance): void {
  if (!caps.reportCpu) return;
  cpuWatched.add(instance);
  if (!cpuTimer) {
    cpuMark = process.cpuUsage();
    cpuTimer = setInterval(reportCpu, CPU_REPORT_MS);
    cpuTimer.unref();
  }
}

/** Adds how long an isolate ran code since `seen` (its running-time clock, ns) to its service's share; returns the new mark. */
function oweCpu(service: string, isolate: ivm.Isolate, seen: bigint): bigint {
  let now: bigint;
  try {
    now = isolate.wallTime;
  } catch {
    return seen;
  }
  if (now <= seen) return seen;
  ranFor.set(service, (ranFor.get(service) ?? 0n) + (now - seen));
  return now;
}

function reportCpu(): void {
  /** Services with calls in their isolates: an isolate only cooling down after its calls (its clock still) is charged nothing. */
  const working = new Set<string>();
  for (const instance of cpuWatched) {
    if (instance.running.size || hasQueued(instance)) working.add(instance.service);
    if (instance.isolate.isDisposed) {
      cpuWatched.delete(instance);
      continue;
    }
    instance.cpuSeen = oweCpu(instance.service, instance.isolate, instance.cpuSeen);
    // Sampled once more after its work is over, then left alone until it runs code again.
    if (!instance.running.size && !hasQueued(instance) && !cooling.has(instance)) cpuWatched.delete(instance);
  }
  const now = process.cpuUsage();
  const usedUs = now.user - cpuMark.user + (now.system - cpuMark.system);
  cpuMark = now;
  // No isolate ran code since the last report: the services with calls share what the process used alike.
  const shares = ranFor.size ? ranFor : new Map([...working].map((service) => [service, 1n]));
  let total = 0n;
  for (const share of shares.values()) total += share;
  if (usedUs > 0 && total > 0n) {
    const use: Array<[string, number]> = [];
    for (const [service, share] of shares) use.push([service, Math.round((usedUs * Number(share)) / Number(total))]);
    wire.send({ t: 'cpu', use });
  }
  ranFor.clear();
  if (!cpuWatched.size) {
    clearInterval(cpuTimer);
    cpuTimer = undefined;
  }
}

process.on('SIGTERM', leave);
// Ctrl-C in a terminal signals the whole process group: the kernel drains, and it stops this
// process when its calls are done (or its pipe closes if the kernel is gone).
process.on('SIGINT', () => {});
