/**
 * A sandbox process: runs service isolates for the kernel. Started by pool.ts with
 * --no-node-snapshot; talks over fd 3. A V8 fatal error here (isolated-vm 5.0.4 can be
 * crashed by some inputs) kills only this process; the kernel restarts it.
 */
import ivm from 'isolated-vm';
import { Socket } from 'node:net';
import { Wire } from './wire.ts';
import { runLocalHostCall, isLocalHostCall } from './local-calls.ts';

interface Caps {
  defaultMemoryMb: number;
  maxMemoryMb: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  maxOutputBytes: number;
}

interface Instance {
  isolate: ivm.Isolate;
  dispatchMany: ivm.Reference<(json: string) => void>;
  resolveHostCall: ivm.Reference<(seq: number, json: string) => void>;
  /** Calls handed to the isolate and not finished. */
  running: Map<number, Call>;
  /** Calls waiting for a slot: each call holds heap in the isolate, so few run at once. */
  waiting: Array<{ id: number; json: string }>;
  flushQueued: boolean;
  disposed: boolean;
  /** Why the kernel disposed it, so the calls it cut short get the right error. */
  disposedFor?: 'timeout';
}

interface Deployed {
  name: string;
  file: string;
  code: string;
  memoryMb: number;
  timeoutMs: number;
  instance: Instance | undefined;
}

interface Call {
  id: number;
  service: Deployed;
  instance: Instance;
  deadline: number;
  timedOut: boolean;
}

// Removed so that service code cannot block its thread on shared memory or compile native-speed code outside the heap limit.
const PRELUDE = `
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  delete globalThis.WebAssembly;
`;

/** Calls one isolate runs at once; more wait here, outside its heap. */
const MAX_CONCURRENT_CALLS = 32;

let sdkCode = '';
let caps: Caps = { defaultMemoryMb: 64, maxMemoryMb: 512, defaultTimeoutMs: 5000, maxTimeoutMs: 60000, maxOutputBytes: 16 << 20 };
const services = new Map<string, Deployed>();
const calls = new Map<number, Call>();

const channel = new Socket({ fd: 3, readable: true, writable: true });
channel.on('close', () => process.exit(0));
channel.on('error', () => process.exit(0));
const wire = new Wire(channel, onMessage);

function createInstance(svc: Deployed): { instance: Instance; meta: Record<string, unknown> } {
  const isolate = new ivm.Isolate({
    memoryLimit: svc.memoryMb,
    onCatastrophicError: (message) => {
      process.stderr.write(`sandbox: catastrophic isolate error in ${svc.name}: ${message}\n`);
      process.abort();
    },
  });
  try {
    const context = isolate.createContextSync();
    const global = context.global;
    context.evalSync(PRELUDE);
    const holder: { instance?: Instance } = {};
    global.setSync(
      '__svc_send',
      new ivm.Callback((callId: number, seq: number, op: string, argsJson: string) => onHostCall(holder.instance, callId, seq, op, argsJson), {
        ignored: true,
      }),
    );
    global.setSync('__svc_done', new ivm.Callback((lines: string) => onResults(holder.instance, lines), { ignored: true }));
    const sdk = isolate.compileModuleSync(sdkCode, { filename: 'svc:sdk' });
    sdk.instantiateSync(context, () => {
      throw new Error('the SDK imports nothing');
    });
    sdk.evaluateSync({ timeout: 2000 });
    const runtime = global.getSync('__svc_runtime', { reference: true }) as ivm.Reference<Record<string, unknown>>;
    const dispatchMany = runtime.getSync('dispatchMany', { reference: true }) as Instance['dispatchMany'];
    const register = runtime.getSync('register', { reference: true }) as ivm.Reference<(def: unknown, max: number) => string>;
    const resolveHostCall = runtime.getSync('resolveHostCall', { reference: true }) as Instance['resolveHostCall'];
    context.evalSync('delete globalThis.__svc_runtime; delete globalThis.__svc_send; delete globalThis.__svc_done;');

    const mod = isolate.compileModuleSync(svc.code, { filename: `file:///services/${svc.file}` });
    const foreign = mod.dependencySpecifiers.filter((s) => s !== 'svc/sdk');
    if (foreign.length) throw new Error(`services may import only from 'svc/sdk' (found '${foreign.join("', '")}')`);
    mod.instantiateSync(context, () => sdk);
    mod.evaluateSync({ timeout: 2000 });
    const definition = mod.namespace.getSync('default', { reference: true }) as ivm.Reference<unknown>;
    if (definition.typeof === 'undefined') throw new Error('the service file must `export default service({...})`');
    const metaJson = register.applySync(undefined, [definition.derefInto(), caps.maxOutputBytes], { timeout: 1000 });
    const instance: Instance = { isolate, dispatchMany, resolveHostCall, running: new Map(), waiting: [], flushQueued: false, disposed: false };
    holder.instance = instance;
    return { instance, meta: JSON.parse(metaJson) as Record<string, unknown> };
  } catch (err) {
    if (!isolate.isDisposed) isolate.dispose();
    throw err;
  }
}

function clamp(value: unknown, fallback: number, max: number): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), max) : fallback;
}

function deploy(name: string, file: string, code: string): void {
  const svc: Deployed = { name, file, code, memoryMb: caps.defaultMemoryMb, timeoutMs: caps.defaultTimeoutMs, instance: undefined };
  try {
    let { instance, meta } = createInstance(svc);
    const limits = (meta.limits ?? {}) as { timeoutMs?: number; memoryMb?: number };
    svc.timeoutMs = clamp(limits.timeoutMs, caps.defaultTimeoutMs, caps.maxTimeoutMs);
    const memoryMb = Math.max(8, clamp(limits.memoryMb, caps.defaultMemoryMb, caps.maxMemoryMb));
    if (memoryMb !== svc.memoryMb) {
      // The memory limit is fixed when an isolate is made, and the service declares it inside: make it again.
      instance.isolate.dispose();
      svc.memoryMb = memoryMb;
      ({ instance, meta } = createInstance(svc));
    }
    svc.instance = instance;
    const previous = services.get(name);
    services.set(name, svc);
    if (previous?.instance) retire(previous.instance);
    wire.send({ t: 'deployed', name, ok: true, meta: { ...meta, limits: { timeoutMs: svc.timeoutMs, memoryMb: svc.memoryMb } } });
  } catch (err) {
    wire.send({ t: 'deployed', name, ok: false, error: describeCompileError(err, file) });
  }
}

/** `file:line:col: message`, with the position V8 gives (compile errors and top-level throws alike). */
function describeCompileError(err: unknown, file: string): string {
  const message = err instanceof Error ? err.message : String(err);
  const escaped = file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const at = new RegExp(`services/${escaped}:(\\d+):(\\d+)`).exec(`${message}\n${(err as Error)?.stack ?? ''}`);
  const text = message.replace(/\s*\[file:\/\/\/services\/[^\]]*\]\s*$/, '');
  return at ? `${file}:${at[1]}:${at[2]}: ${text}` : `${file}: ${text}`;
}

/** Disposes an instance once the calls it is running have finished. */
function retire(instance: Instance): void {
  if (instance.running.size === 0 && instance.waiting.length === 0) dispose(instance);
  else instance.disposed = true;
}

function dispose(instance: Instance, reason?: 'timeout'): void {
  instance.disposed = true;
  if (reason) instance.disposedFor = reason;
  if (!instance.isolate.isDisposed) instance.isolate.dispose();
}

function instanceFor(svc: Deployed): Instance {
  if (svc.instance && !svc.instance.disposed && !svc.instance.isolate.isDisposed) return svc.instance;
  svc.instance = createInstance(svc).instance;
  return svc.instance;
}

function call(id: number, name: string, requestJson: string): void {
  const svc = services.get(name);
  if (!svc) {
    wire.send({ t: 'result', id, fail: 'SERVICE_NOT_DEPLOYED' });
    return;
  }
  let instance: Instance;
  try {
    instance = instanceFor(svc);
  } catch (err) {
    wire.send({ t: 'result', id, fail: 'SERVICE_NOT_DEPLOYED', message: String((err as Error).message) });
    return;
  }
  instance.waiting.push({ id, json: requestJson });
  calls.set(id, { id, service: svc, instance, deadline: Infinity, timedOut: false });
  if (!instance.flushQueued) {
    instance.flushQueued = true;
    process.nextTick(startWaiting, instance);
  }
}

/** Hands waiting calls to the isolate in one batch, up to its concurrency cap. */
function startWaiting(instance: Instance): void {
  instance.flushQueued = false;
  const room = MAX_CONCURRENT_CALLS - instance.running.size;
  if (room <= 0 || !instance.waiting.length || instance.isolate.isDisposed) return;
  const batch = instance.waiting.splice(0, room);
  const deadline = Date.now();
  let json = '[';
  for (let i = 0; i < batch.length; i++) {
    const item = batch[i]!;
    const entry = calls.get(item.id);
    if (!entry) continue;
    entry.deadline = deadline + entry.service.timeoutMs;
    instance.running.set(item.id, entry);
    json += (i ? ',' : '') + item.json;
  }
  instance.dispatchMany.applyIgnored(undefined, [json + ']']);
}

function onResults(instance: Instance | undefined, lines: string): void {
  if (!instance) return;
  let start = 0;
  for (let nl = lines.indexOf('\n'); nl !== -1; start = nl + 1, nl = lines.indexOf('\n', start)) {
    const tab = lines.indexOf('\t', start);
    const id = Number(lines.slice(start, tab));
    if (!instance.running.delete(id) || !calls.delete(id)) continue;
    const envelope = lines.slice(tab + 1, nl);
    if (envelope.length > caps.maxOutputBytes + 1024) wire.send({ t: 'result', id, fail: 'SERVICE_OUTPUT_TOO_LARGE' });
    else wire.sendRaw('{"t":"result","id":' + id + '}\t' + envelope + '\n');
  }
  afterProgress(instance);
}

function afterProgress(instance: Instance): void {
  if (instance.waiting.length && !instance.flushQueued && !instance.isolate.isDisposed) {
    instance.flushQueued = true;
    process.nextTick(startWaiting, instance);
  }
  if (instance.disposed && instance.running.size === 0 && instance.waiting.length === 0) dispose(instance);
}

/** Fails every call of an isolate that died under them (time limit, memory limit). */
function failCallsOf(instance: Instance): void {
  for (const entry of [...instance.running.values(), ...instance.waiting.map((w) => calls.get(w.id)).filter((e): e is Call => !!e)]) {
    calls.delete(entry.id);
    if (entry.timedOut) wire.send({ t: 'result', id: entry.id, fail: 'SERVICE_TIMEOUT' });
    else if (instance.disposedFor === 'timeout') wire.send({ t: 'result', id: entry.id, fail: 'SERVICE_UNAVAILABLE', message: 'service sandbox was reset after another call timed out' });
    else wire.send({ t: 'result', id: entry.id, fail: 'SERVICE_MEMORY_LIMIT' });
  }
  instance.running.clear();
  instance.waiting.length = 0;
  instance.disposed = true;
}

function onHostCall(instance: Instance | undefined, callId: number, seq: number, op: string, argsJson: string): void {
  // Pure operations need no request: answered here whatever call they are attributed to.
  if (isLocalHostCall(op)) {
    answerHostCall(instance, seq, runLocalHostCall(op, argsJson));
    return;
  }
  const entry = calls.get(callId);
  if (!instance || !entry || entry.instance !== instance) {
    answerHostCall(instance, seq, { ok: false, error: { kind: 'Error', status: 500, message: 'host call outside a running request' } });
    return;
  }
  hostCalls.set(seq + ':' + callId, instance);
  wire.send({ t: 'hostcall', id: callId, seq, op }, argsJson);
}

const hostCalls = new Map<string, Instance>();

function answerHostCall(instance: Instance | undefined, seq: number, reply: unknown): void {
  answerHostCallJson(instance, seq, JSON.stringify(reply));
}

function answerHostCallJson(instance: Instance | undefined, seq: number, replyJson: string): void {
  if (!instance || instance.isolate.isDisposed) return;
  instance.resolveHostCall.applyIgnored(undefined, [seq, replyJson]);
}

function onMessage(header: Record<string, unknown>, body: string): void {
  switch (header.t) {
    case 'call':
      call(header.id as number, header.svc as string, body);
      break;
    case 'hostreply': {
      const key = `${header.seq as number}:${header.id as number}`;
      const instance = hostCalls.get(key);
      hostCalls.delete(key);
      answerHostCallJson(instance, header.seq as number, body);
      break;
    }
    case 'deploy':
      deploy(header.name as string, header.file as string, JSON.parse(body) as string);
      break;
    case 'undeploy': {
      const svc = services.get(header.name as string);
      services.delete(header.name as string);
      if (svc?.instance) retire(svc.instance);
      break;
    }
    case 'init':
      caps = header.caps as Caps;
      sdkCode = JSON.parse(body) as string;
      wire.send({ t: 'ready' });
      break;
  }
}

// Wall-clock watchdog: one timer for all calls, so a call costs no timer of its own.
// It also notices isolates that died under their calls (the memory limit disposes them).
setInterval(() => {
  const now = Date.now();
  const dead = new Set<Instance>();
  for (const entry of calls.values()) {
    if (entry.instance.isolate.isDisposed) dead.add(entry.instance);
    else if (!entry.timedOut && now > entry.deadline) {
      entry.timedOut = true;
      dispose(entry.instance, 'timeout');
      dead.add(entry.instance);
    }
  }
  for (const instance of dead) failCallsOf(instance);
}, 20).unref();

process.on('SIGTERM', () => process.exit(0));
