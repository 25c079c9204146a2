/**
 * A stand-in sandbox process for the floor suite (bench/suites/floor.ts): it speaks the kernel's
 * wire (kernel/sandbox/wire.ts, the plain-line subset a GET call uses) and answers every call with
 * the trivial service's result, but runs none of svc's sandbox: no SDK, no runtime, no limits.
 * - `echo`: answers on this thread, at once: what the crossing between processes costs alone.
 * - `isolate`: hands each batch of calls to one isolated-vm isolate with one asynchronous call and
 *   takes the results back with one callback, as svc's worker does at the least: the floor any
 *   sandbox built on isolated-vm in its own process can reach.
 * Started by the kernel in place of its sandbox program (SVC_SANDBOX_PROGRAM names the file
 * program.ts writes); plain JavaScript, since sandbox processes run without a TypeScript loader.
 */
import { createRequire } from 'node:module';
import { Socket } from 'node:net';

const RESULT = '{"status":200,"headers":{},"logs":[]}';
const META = { verbs: ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'], hasGeneric: true, input: null, limits: {} };

/** `isolatedVm`: the entry of the isolated-vm the kernel loads for this Node (the isolate mode's only). */
export function standIn(mode, isolatedVm) {
  const channel = new Socket({ fd: 3, readable: true, writable: true });
  channel.on('close', () => process.kill(process.pid, 'SIGKILL'));
  channel.on('error', () => process.kill(process.pid, 'SIGKILL'));
  channel.setEncoding('utf8');

  let out = [];
  let flushing = false;
  const flush = () => {
    flushing = false;
    const text = out.join('');
    out = [];
    channel.write(text);
  };
  const send = (line) => {
    out.push(line);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  };

  const answer = mode === 'isolate' ? isolateAnswer(send, isolatedVm) : (id) => send('{"t":"result","id":' + id + '}\t' + RESULT + '\t{"hello":"world"}\n');

  let buffered = '';
  channel.on('data', (chunk) => {
    const data = buffered + chunk;
    let start = 0;
    for (let nl = data.indexOf('\n'); nl !== -1; start = nl + 1, nl = data.indexOf('\n', start)) {
      const line = data.slice(start, nl);
      const tab = line.indexOf('\t');
      const header = JSON.parse(tab === -1 ? line : line.slice(0, tab));
      if (header.t === 'call') answer(header.id, line.slice(tab + 1));
      else if (header.t === 'init') send('{"t":"ready"}\n');
      else if (header.t === 'deploy') send(JSON.stringify({ t: 'deployed', did: header.did, ok: true, meta: META }) + '\n');
    }
    buffered = data.slice(start);
  });
}

function isolateAnswer(send, isolatedVm) {
  const ivm = createRequire(import.meta.url)(isolatedVm);
  const isolate = new ivm.Isolate({ memoryLimit: 64 });
  const context = isolate.createContextSync();
  context.global.setSync(
    '__done',
    new ivm.Callback(
      (lines) => {
        let start = 0;
        for (let nl = lines.indexOf('\n'); nl !== -1; start = nl + 1, nl = lines.indexOf('\n', start)) {
          const tab = lines.indexOf('\t', start);
          send('{"t":"result","id":' + lines.slice(start, tab) + '}\t' + lines.slice(tab + 1, nl) + '\n');
        }
      },
      { ignored: true },
    ),
  );
  // Each request is parsed and answered with its value encoded, the results of a batch leaving together after the microtask turn.
  context.evalSync(`globalThis.__many = (json) => {
    let lines = '';
    for (const request of JSON.parse(json)) lines += request.callId + '\\t${RESULT}\\t' + JSON.stringify({ hello: 'world' }) + '\\n';
    Promise.resolve().then(() => __done(lines));
  };`);
  const many = context.global.getSync('__many', { reference: true });
  let batch = '';
  return (_id, requestJson) => {
    if (batch === '') process.nextTick(() => {
      const json = batch + ']';
      batch = '';
      many.applyIgnored(undefined, [json]);
    });
    batch += (batch === '' ? '[' : ',') + requestJson;
  };
}
